"""Reactive mode on a real Spark standalone cluster (a master and one-core workers on this
machine): the job starts on the one worker's slot; a worker added, it scales up to two once the
stabilization time passed; that worker SIGKILLed, it goes on at one instead of waiting for the
slot to come back. Both changes are in the rescale history (REST), and the committed output is
exactly once, record by record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.jobs import odd_even
from tests.servers.spark_standalone import standalone_cluster

pytestmark = [pytest.mark.faults]

ROOT = Path(__file__).resolve().parents[2]
N = 40000
JOB = """
import sys
from barrierflow import StreamExecutionEnvironment
from tests.jobs import odd_even

base = sys.argv[1]
env = StreamExecutionEnvironment().set_parallelism(4)
odd_even.build(env, {n}, f"{{base}}/out", f"{{base}}/ckpt", interval_ms=300, delay_s=0.001)
env.execute("reactive")
"""


def rescales(url: str, job_id: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/jobs/{job_id}/rescales", timeout=10) as answer:
        return json.loads(answer.read())["rescales"]


def wait_for_rescale(url: str, job_id: str, count: int, submit, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        done = sorted(
            (r for r in rescales(url, job_id) if r["status"] != "IN_PROGRESS"),
            key=lambda r: r["id"],
        )
        if len(done) >= count:
            return done[count - 1]
        assert submit.poll() is None, "the job ended first"
        assert time.monotonic() < deadline, f"no rescale {count}: {rescales(url, job_id)}"
        time.sleep(0.2)


def test_the_job_follows_workers_that_come_and_go_exactly_once(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(n=N)))
    with standalone_cluster(workers=1) as cluster:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
               "SPARK_HOME": cluster.spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
               "BARRIERFLOW_HOME": str(tmp_path / "home")}  # fmt: skip
        env.pop("PYSPARK_GATEWAY_PORT", None)
        with open(tmp_path / "driver.log", "wb") as log:
            submit = subprocess.Popen(
                [sys.executable, "-m", "barrierflow.cli", "run", "--master", cluster.master_url,
                 "--conf", "spark.executor.memory=512m",
                 "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
                 "-D", "scheduler-mode=reactive",
                 "-D", "jobmanager.adaptive-scheduler.resource-stabilization-timeout=2s",
                 "-D", "rest.port=0", str(job), "--", str(tmp_path)],
                env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                url, job_id = _started(tmp_path, submit)
                cluster.add_worker()
                up = wait_for_rescale(url, job_id, 1, submit)
                cluster.kill_worker(1)
                killed_at = time.time()
                down = wait_for_rescale(url, job_id, 2, submit)
                assert submit.wait(300) == 0, (tmp_path / "driver.log").read_text()[-3000:]
            finally:
                if submit.poll() is None:
                    submit.kill()

    assert (up["status"], up["trigger"]) == ("COMPLETED", "reactive"), up
    assert set(up["to_parallelism"].values()) == {2}, up
    assert (down["status"], down["trigger"]) == ("COMPLETED", "reactive"), down
    assert set(down["to_parallelism"].values()) == {1}, down
    print(f"scaled down {down['ended_ms'] / 1000 - killed_at:.1f} s after the kill")
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)


def _started(tmp_path: Path, submit) -> tuple[str, str]:
    """The job's REST URL and id once it completed a checkpoint."""
    deadline = time.monotonic() + 180
    while True:
        found = list((tmp_path / "ckpt").glob("*/chk-*/_metadata"))
        if found:
            job_dir = found[0].parents[1]
            address = json.loads((job_dir / "_jobmaster.json").read_text())
            return address["rest_url"], job_dir.name
        assert submit.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.2)
