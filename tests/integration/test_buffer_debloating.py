"""Buffer debloating on Spark: under real back-pressure (a slow stage behind a keyed shuffle),
with ``taskmanager.network.memory.buffer-debloat.enabled``, aligned checkpoints complete while
the job runs, a kill after one of them restores from it, and the output holds every record
exactly once. Shown by what the job wrote and what its checkpoints say, not by durations."""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.protocol.checkpoint_barrier import CheckpointKind
from tests.jobs import backpressured
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark

N = 30_000
DEBLOATED = {
    "taskmanager.network.memory.buffer-debloat.enabled": True,
    "taskmanager.network.memory.buffer-debloat.target": "200 ms",
    "taskmanager.network.memory.buffer-debloat.period": "50 ms",
}


def test_aligned_checkpoints_under_back_pressure_complete_and_restore_exactly_once(spark, tmp_path):
    ckpt, marker = str(tmp_path / "ckpt"), str(tmp_path / "killed")
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    kill = backpressured.Kill(N // 3, marker, ckpt, data_in_flight=False)
    backpressured.build(
        env, N, str(tmp_path / "out"), ckpt, str(tmp_path / "logs"), DEBLOATED, kill,
        interval_ms=200,
    )  # fmt: skip
    result = env.execute("debloated")

    assert os.path.exists(marker), "the kill never fired: no checkpoint completed mid-stream"
    assert result.attempts == 2
    periodic = [
        r
        for r in result.checkpoint_history
        if r.kind is CheckpointKind.CHECKPOINT and r.status is CheckpointStatus.COMPLETED
    ]
    assert periodic, "no periodic checkpoint completed"
    assert not any(r.unaligned or r.persisted_data for r in periodic)  # aligned, all of them

    records = read_committed(str(tmp_path / "out"))  # [key, value, count of the key so far]
    assert sorted(value for _, value, _ in records) == list(range(1, N + 1))
    counts = defaultdict(list)
    for key, value, count in records:
        assert key == value % backpressured.KEYS
        counts[key].append((value, count))
    for key, seen in counts.items():  # one source subtask: each key's values in order
        assert [count for _, count in sorted(seen)] == list(range(1, len(seen) + 1)), key
