"""Driver high availability with real driver processes on local Spark: the driver's whole
process group SIGKILLed and the same command started again (no ``--resume``); a standby that
takes over when the leader is SIGKILLed; and a leader SIGSTOPped past its lease, which finds on
waking that a standby leads, commits nothing and exits with its own status. Each run's committed
output is held to what a failure-free run commits, record by record."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs import odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

ROOT = Path(__file__).resolve().parents[2]
LEASE_S = 2.0


def _env(tmp_path: Path, n: int) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYSPARK_PYTHON": sys.executable,
        "ODD_EVEN_N": str(n),
        "ODD_EVEN_OUT": str(tmp_path / "out"),
        "ODD_EVEN_CKPT": str(tmp_path / "ckpt"),
        "BARRIERFLOW_LOG_DIR": str(tmp_path / "logs"),
    }


def _command(tmp_path: Path) -> list[str]:
    return [
        sys.executable, "-m", "barrierflow.cli", "run", "tests/jobs/highly_available.py",
        "-D", "high-availability.type=filesystem",
        "-D", f"high-availability.storageDir={tmp_path / 'ha'}",
        "-D", "high-availability.cluster-id=odd-even",
        "-D", f"high-availability.filesystem.lease-duration={LEASE_S:g} s",
        "-D", "rest.port=0",
    ]  # fmt: skip


def _start(tmp_path: Path, n: int, name: str) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - the process writes it
    return subprocess.Popen(
        _command(tmp_path), env=_env(tmp_path, n), cwd=ROOT, stdout=log, stderr=log,
        start_new_session=True,
    )  # fmt: skip


def _log(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text()


def _completed_checkpoints(tmp_path: Path) -> int:
    for history in (tmp_path / "ckpt").glob("*/_history.json"):
        with contextlib.suppress(ValueError, OSError):
            records = json.loads(history.read_text())["records"]
            return sum(r["status"] == "COMPLETED" for r in records)
    return 0


def _wait_for(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _finish(process: subprocess.Popen, timeout_s: float = 300) -> int:
    try:
        return process.wait(timeout_s)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


def test_the_same_command_started_again_goes_on_with_the_job_exactly_once(tmp_path):
    n = 20000
    first = _start(tmp_path, n, "first")
    _wait_for(
        lambda: _completed_checkpoints(tmp_path) >= 2 or first.poll() is not None, "checkpoints"
    )
    assert first.poll() is None, _log(tmp_path, "first")
    os.killpg(first.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
    first.wait()

    again = _start(tmp_path, n, "again")
    assert _finish(again) == 0, _log(tmp_path, "again")[-3000:]
    log = _log(tmp_path, "again")
    assert "as epoch 2 (the leader of epoch 1" in log and "is gone)" in log  # at once
    assert "goes on with job highly-available" in log
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), n)
    (job_root,) = (tmp_path / "ckpt").iterdir()
    metadata = next(job_root.glob("chk-*/_metadata"))
    checkpoints = json.loads((job_root / "_history.json").read_text())["records"]
    assert {r["leader_epoch"] for r in checkpoints} == {1, 2}
    # ids go on past what epoch 1 reserved: the checkpoint of epoch 2 is above its block
    assert min(r["checkpoint_id"] for r in checkpoints if r["leader_epoch"] == 2) > 100
    assert metadata.exists()

    # the job finished: the same command now says so and runs nothing
    done = subprocess.run(
        _command(tmp_path), env=_env(tmp_path, n), cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "already ended, FINISHED" in done.stdout + done.stderr


def test_a_standby_takes_over_when_the_leader_is_killed(tmp_path):
    n = 20000
    leader = _start(tmp_path, n, "leader")
    _wait_for(lambda: "Leading cluster" in _log(tmp_path, "leader"), "the leader")
    standby = _start(tmp_path, n, "standby")
    _wait_for(lambda: "Standby for cluster id odd-even" in _log(tmp_path, "standby"), "standby")
    _wait_for(
        lambda: _completed_checkpoints(tmp_path) >= 2 or leader.poll() is not None, "checkpoints"
    )
    assert leader.poll() is None and standby.poll() is None, _log(tmp_path, "leader")[-2000:]
    assert "Job highly-available" not in _log(tmp_path, "standby")  # it does not run the job

    os.killpg(leader.pid, signal.SIGKILL)
    leader.wait()

    assert _finish(standby) == 0, _log(tmp_path, "standby")[-3000:]
    assert "as epoch 2" in _log(tmp_path, "standby")
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), n)


def test_a_leader_paused_past_its_lease_commits_nothing_and_exits_when_it_wakes(tmp_path):
    n = 40000
    leader = _start(tmp_path, n, "leader")
    _wait_for(lambda: "Leading cluster" in _log(tmp_path, "leader"), "the leader")
    standby = _start(tmp_path, n, "standby")
    _wait_for(lambda: "Standby for cluster id odd-even" in _log(tmp_path, "standby"), "standby")
    _wait_for(
        lambda: _completed_checkpoints(tmp_path) >= 2 or leader.poll() is not None, "checkpoints"
    )
    assert leader.poll() is None, _log(tmp_path, "leader")[-2000:]

    os.killpg(leader.pid, signal.SIGSTOP)  # the driver, its JVM and its Python workers
    try:
        time.sleep(3 * LEASE_S)
        _wait_for(lambda: "as epoch 2" in _log(tmp_path, "standby"), "the standby to lead", 60)
    finally:
        os.killpg(leader.pid, signal.SIGCONT)
    woke = time.monotonic()

    assert _finish(leader, 90) == 4, _log(tmp_path, "leader")[-3000:]
    assert time.monotonic() - woke < 60
    assert "lost leadership to epoch 2" in _log(tmp_path, "leader")
    assert _finish(standby) == 0, _log(tmp_path, "standby")[-3000:]
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), n)
