"""The back-pressured job with unaligned checkpoints, killed (SIGKILL) while its latest
checkpoint holds data in flight: the committed output equals a failure-free run, record by
record. After an in-job restart, after a restore at another parallelism, and with the
aligned-checkpoint timeout mixing aligned and unaligned checkpoints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import backpressured, odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 20_000
UNALIGNED = {"execution.checkpointing.unaligned.enabled": True}


def _run(spark, base, conf: dict, kill_at: int | None = None, slow_range=None, typed=False):
    kill = None
    if kill_at is not None:
        kill = backpressured.Kill(kill_at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    backpressured.build(
        env,
        N,
        str(base / "out"),
        str(base / "ckpt"),
        str(base / "logs"),
        conf,
        kill=kill,
        slow_range=slow_range,
        typed=typed,
    )
    result = env.execute(base.name)
    return result, odd_even.read_committed(str(base / "out"))


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory) -> list:
    """The failure-free output (aligned checkpoints)."""
    _, records = _run(spark, tmp_path_factory.mktemp("golden") / "golden", {})
    assert len(records) == N
    return sorted(records)


def _restored_record(result):
    (restore,) = result.restores
    return next(r for r in result.checkpoint_history if r.checkpoint_id == restore.checkpoint_id)


@pytest.mark.parametrize(
    ("kill_at", "typed"), [(3_000, False), (9_000, False), (16_000, False), (9_000, True)]
)
def test_a_kill_with_data_in_flight_in_the_latest_checkpoint_commits_exactly_once(
    spark, tmp_path, golden, kill_at, typed
):
    """``typed``: declared types, so the buffers in flight are MessagePack."""
    result, records = _run(spark, tmp_path / f"kill-{kill_at}", UNALIGNED, kill_at, typed=typed)

    assert (tmp_path / f"kill-{kill_at}" / "fired").exists(), "the kill never fired"
    assert result.attempts == 2
    restored = _restored_record(result)
    assert restored.unaligned and restored.persisted_data > 0
    assert sorted(records) == golden


def test_with_the_timeout_some_checkpoints_stay_aligned_and_a_kill_commits_exactly_once(
    spark, tmp_path, golden
):
    """Slow only for values 6,000 to 14,000: checkpoints taken outside that stretch align
    within the timeout, those inside it time out and go unaligned."""
    conf = {**UNALIGNED, "execution.checkpointing.aligned-checkpoint-timeout": "50 ms"}
    result, records = _run(spark, tmp_path / "timeout", conf, 10_000, slow_range=(6_000, 14_000))

    assert result.attempts == 2
    assert _restored_record(result).persisted_data > 0
    completed = [r for r in result.checkpoint_history if r.status is CheckpointStatus.COMPLETED]
    assert {r.unaligned for r in completed} == {True, False}
    assert all(r.persisted_data == 0 for r in completed if not r.unaligned)
    assert sorted(records) == golden


def test_a_kill_then_a_restore_at_another_parallelism_routes_the_data_in_flight_again(
    spark, tmp_path, golden
):
    """The driver (JobMaster, Spark and all) of a run at parallelism 2 is killed once its
    latest checkpoint holds data in flight; a new run at parallelism 3 restores that
    checkpoint: in-flight records go to the subtask that now owns their key group."""
    base = tmp_path / "rescaled"
    env = {
        **os.environ,
        "PYTHONPATH": os.getcwd(),
        "BACKPRESSURED_N": str(N),
        "BACKPRESSURED_OUT": str(base / "out"),
        "BACKPRESSURED_CKPT": str(base / "ckpt"),
        "BACKPRESSURED_LOGS": str(base / "logs"),
        "BACKPRESSURED_CONF": json.dumps(UNALIGNED),
    }
    command = [sys.executable, "-m", "barrierflow.cli", "run", "tests/jobs/backpressured.py"]
    first = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    latest = None
    while latest is None or latest["persisted_data"] == 0 or latest["checkpoint_id"] < 3:
        assert first.poll() is None, "the first run ended before the kill"
        assert time.monotonic() < deadline, "no checkpoint with data in flight"
        time.sleep(0.02)
        latest = backpressured.latest_completed(str(base / "ckpt"))
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    (job_root,) = (base / "ckpt").iterdir()
    newest = max(CheckpointDirectory(str(job_root)).list_completed())
    metadata = CheckpointDirectory(str(job_root)).read_metadata(newest)
    assert any(s.channel_state for s in metadata.operator("count").subtasks)

    second = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(3)
    second.set_restore_path(str(job_root / f"chk-{newest}"))
    backpressured.build(
        second, N, str(base / "out"), str(base / "ckpt2"), str(base / "logs"), UNALIGNED
    )
    result = second.execute("rescaled")

    (restore,) = result.restores
    assert restore.checkpoint_id == newest
    assert sorted(odd_even.read_committed(str(base / "out"))) == golden
