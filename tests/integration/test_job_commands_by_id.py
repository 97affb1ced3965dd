"""Operating a job by its id, as a user does: ``run -d`` returns the id at once, ``list`` shows
the job, ``savepoint`` and ``exceptions`` find it with no directory given, ``cancel`` ends it
(its driver exits with the canceled status), and ``list -a`` shows how it ended; ``info``
prints a job file's plan without running it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

JOB = """
import time
from barrierflow import StreamExecutionEnvironment
from barrierflow.connectors import DiscardingSink, SequenceSource

def slow(x):
    time.sleep(0.001)
    return x

env = StreamExecutionEnvironment().set_parallelism(2)
env.enable_checkpointing(300)
env.get_checkpoint_config().set_checkpoint_storage({ckpt!r})
env.from_source(SequenceSource(1, 10**7), "numbers").map(slow).uid("slow").sink_to(
    DiscardingSink()
).uid("sink")
env.execute("by-id")
"""


def cli(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "BARRIERFLOW_HOME": str(tmp_path / "home"),
        "BARRIERFLOW_LOG_DIR": str(tmp_path / "logs"),
    }
    return subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", *args], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_a_job_run_detached_is_listed_savepointed_and_canceled_by_its_id(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(ckpt=str(tmp_path / "ckpt"))))
    started = cli(tmp_path, "run", "-d", str(job), "-D", "rest.port=0")
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip().splitlines()[-1]
    assert len(job_id) == 32 and f"Job by-id ({job_id}) runs" in started.stdout

    listed = json.loads(cli(tmp_path, "list", "--json").stdout)
    assert [(r["job_id"], r["state"], r["stale"]) for r in listed] == [(job_id, "RUNNING", False)]

    deadline = time.monotonic() + 60
    while not list((tmp_path / "ckpt" / job_id).glob("chk-*/_metadata")):
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.2)
    savepoint = cli(tmp_path, "savepoint", job_id, str(tmp_path / "savepoints"))
    assert savepoint.returncode == 0, savepoint.stderr
    assert "Savepoint completed. Path: " in savepoint.stdout
    assert cli(tmp_path, "exceptions", job_id).stdout.startswith(f"Job {job_id} recorded no")

    canceled = cli(tmp_path, "cancel", job_id)
    assert canceled.returncode == 0, canceled.stderr
    assert f"Job {job_id} canceled" in canceled.stdout
    assert cli(tmp_path, "list").stdout.strip() == "No running jobs."
    ended = json.loads(cli(tmp_path, "list", "-a", "--json").stdout)
    assert [(r["job_id"], r["state"]) for r in ended] == [(job_id, "CANCELED")]
    (log,) = (tmp_path / "home" / "logs").glob("job-*.log")
    deadline = time.monotonic() + 30
    while "was canceled." not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.2)
    assert "Job failed" not in log.read_text()


def test_info_prints_the_plan_and_runs_nothing(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(ckpt=str(tmp_path / "ckpt"))))
    shown = cli(tmp_path, "info", str(job), "-p", "3")
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert [n["parallelism"] for n in plan["nodes"]] == [3, 3, 3]
    assert not (tmp_path / "ckpt").exists()


def test_a_canceled_job_s_driver_says_canceled_and_exits_with_its_own_status(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(JOB.format(ckpt=str(tmp_path / "ckpt"))))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "BARRIERFLOW_HOME": str(tmp_path / "home"),
    }
    driver = subprocess.Popen(
        [sys.executable, "-m", "barrierflow.cli", "run", str(job), "-D", "rest.port=0"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        listed: list = []
        while not listed:
            assert time.monotonic() < deadline and driver.poll() is None, "the job did not run"
            listed = json.loads(cli(tmp_path, "list", "--json").stdout)
            time.sleep(0.5)
        assert cli(tmp_path, "cancel", listed[0]["job_id"]).returncode == 0
        _, err = driver.communicate(timeout=60)
    finally:
        driver.kill()
    assert driver.returncode == 3, err[-2000:]
    assert f"Job by-id ({listed[0]['job_id']}) was canceled." in err
    assert "Job failed" not in err
