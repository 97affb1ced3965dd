"""``barrierflow run`` starts Spark's JVM while the job file is imported: a job file that fails
before ``execute()`` still fails with its own error, and the JVM started for it is stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).parents[2]

FAILS_TO_BUILD = """
from barrierflow.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
raise ValueError("the program's own mistake")
env.execute("never")
"""

# In a process of its own: the test session's SparkContext must not be the one stopped.
LAUNCH_THEN_STOP = """
import os, sys, time
from barrierflow.cluster.spark import jvm_launch
from barrierflow.cluster.spark.session import launch_jvm_early
from pyspark import SparkContext

def children():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            found.append(pid)
    return found

launch_jvm_early(None, {}, sys.argv[1])
deadline = time.monotonic() + 60
while not children() and time.monotonic() < deadline:  # the launch's spark-submit
    time.sleep(0.05)
started = children()
jvm_launch.stop_unused()
print(len(started), len(children()), SparkContext._gateway is None)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "BARRIERFLOW_LOG_DIR": str(tmp_path / "logs"),
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
    }


def test_a_job_file_that_fails_before_execute_reports_its_own_error(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(FAILS_TO_BUILD)

    run = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", str(job)],
        capture_output=True, text=True, env=_env(tmp_path), timeout=120,
    )  # fmt: skip

    assert run.returncode == 1, run.stderr
    assert f"Error in job file {job}: ValueError: the program's own mistake" in run.stderr


def test_a_jvm_started_early_that_no_context_used_is_stopped(tmp_path):
    run = subprocess.run(
        [sys.executable, "-c", LAUNCH_THEN_STOP, str(tmp_path / "spark.log")],
        capture_output=True, text=True, env=_env(tmp_path), timeout=120,
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    started, left, gateway_gone = run.stdout.split()
    assert int(started) >= 1
    assert (int(left), gateway_gone) == (0, "True")
