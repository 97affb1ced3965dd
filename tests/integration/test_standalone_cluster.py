"""A job submitted with spark-submit to a real Spark standalone cluster (a master and two
one-core workers on this machine) runs on the cluster's executors, survives the SIGKILL of an
executor JVM mid-stream, and commits each running sum exactly once."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs import odd_even
from tests.servers.spark_standalone import standalone_cluster

pytestmark = [pytest.mark.faults]

N = 6000
ROOT = Path(__file__).resolve().parents[2]


def test_spark_submit_runs_on_the_cluster_and_survives_a_killed_executor(tmp_path):
    out, ckpt, result_file = tmp_path / "out", tmp_path / "ckpt", tmp_path / "result.json"
    with standalone_cluster(workers=2) as cluster:
        env = {
            **os.environ,
            "SPARK_HOME": cluster.spark_home,
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": str(ROOT),
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        env.pop("PYSPARK_GATEWAY_PORT", None)
        with open(tmp_path / "submit.log", "wb") as log:
            submit = subprocess.Popen(
                [os.path.join(cluster.spark_home, "bin", "spark-submit"),
                 "--master", cluster.master_url, "--name", "odd-even-on-standalone",
                 "--conf", f"spark.pyspark.python={sys.executable}",
                 "--conf", "spark.executor.memory=512m",
                 "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",  # the job's own modules
                 str(ROOT / "tests" / "jobs" / "standalone_job.py"),
                 str(N), str(out), str(ckpt), str(result_file)],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
            )  # fmt: skip
            killed = _kill_an_executor_after_the_first_checkpoint(cluster, ckpt, submit)
            assert submit.wait(240) == 0, (tmp_path / "submit.log").read_text()[-3000:]
        apps = cluster.state()["completedapps"] + cluster.state()["activeapps"]

    assert "odd-even-on-standalone" in [a["name"] for a in apps], "the master never ran it"
    assert killed, "no executor JVM to kill"
    assert json.loads(result_file.read_text())["attempts"] >= 2
    odd_even.check_exactly_once(odd_even.read_committed(str(out)), N)


def _kill_an_executor_after_the_first_checkpoint(cluster, ckpt, submit) -> int | None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and submit.poll() is None:
        if glob.glob(f"{ckpt}/*/chk-*/_metadata"):
            pids = cluster.executor_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                return pids[0]
        time.sleep(0.1)
    return None
