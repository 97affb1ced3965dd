"""Unaligned checkpoints under real back-pressure, on Spark: a slow stage behind a keyed shuffle
holds seconds of buffered records. An unaligned checkpoint completes while that backlog is
still there (its barrier overtook it, and the backlog is in the checkpoint as data in flight);
an aligned one completes only once the slow stage processed everything read before it was
triggered. Shown by what each checkpoint holds and by the job's own progress logs, not by
durations."""

from __future__ import annotations

import time

import pytest

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobCanceledError
from tests.jobs import backpressured

pytestmark = pytest.mark.spark

N = 10_000_000  # never reached: each run is canceled after a few checkpoints
SLACK = 2 * 64  # the slow stage's subtasks log every 64 records


def _run_until_checkpoints(spark, tmp_path, conf: dict, completed: int = 3):
    log_dir = str(tmp_path / "logs")
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    retain = {"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
    backpressured.build(
        env,
        N,
        str(tmp_path / "out"),
        str(tmp_path / "ckpt"),
        log_dir,
        {**retain, **conf},
        interval_ms=300,
    )
    client = env.execute_async("backpressured")
    deadline = time.monotonic() + 120
    latest = None
    while latest is None or latest["checkpoint_id"] < completed + 1:  # the first may be early
        assert time.monotonic() < deadline, f"fewer than {completed} checkpoints completed"
        time.sleep(0.1)
        latest = backpressured.latest_completed(str(tmp_path / "ckpt"))
    client.cancel()
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(60)
    storage = CheckpointDirectory(str(tmp_path / "ckpt" / client.get_job_id()))
    done = [r for r in storage.read_history().records if r.status is CheckpointStatus.COMPLETED]
    return done[1:], backpressured.ProgressLogs(log_dir), storage


def test_unaligned_checkpoints_complete_with_the_backlog_in_flight_aligned_ones_after_it(
    spark, tmp_path
):
    unaligned, logs, storage = _run_until_checkpoints(
        spark, tmp_path / "unaligned", {"execution.checkpointing.unaligned.enabled": True}
    )
    assert unaligned
    for record in unaligned:
        read_at_trigger = logs.source_read(record.trigger_timestamp_ms)
        processed_at_end = logs.slow_processed(record.end_timestamp_ms)
        backlog = read_at_trigger - logs.slow_processed(record.trigger_timestamp_ms)
        assert backlog > 1000, f"checkpoint {record.checkpoint_id}: no back-pressure to speak of"
        assert record.unaligned and record.persisted_data > 0
        assert processed_at_end < read_at_trigger, (
            f"unaligned checkpoint {record.checkpoint_id} completed only after the slow stage "
            f"processed what was read before its trigger ({processed_at_end} >= "
            f"{read_at_trigger})"
        )
        slow = [s for s in record.subtasks if s.vertex == "v1"]
        assert all(s.unaligned for s in slow) and sum(s.persisted_data for s in slow) > 0
        assert all(s.start_delay_ms >= 0 for s in record.subtasks)
    (retained,) = [storage.read_metadata(c) for c in storage.list_completed()]
    count = retained.operator("count")  # the first operator of the slow stage's chain
    assert [s.channel_state is not None for s in count.subtasks] == [True, True]

    aligned, logs, _ = _run_until_checkpoints(spark, tmp_path / "aligned", {})
    assert aligned
    for record in aligned:
        read_at_trigger = logs.source_read(record.trigger_timestamp_ms)
        processed_at_end = logs.slow_processed(record.end_timestamp_ms)
        assert not record.unaligned and record.persisted_data == 0
        assert processed_at_end >= read_at_trigger - SLACK, (
            f"aligned checkpoint {record.checkpoint_id} completed before the slow stage "
            f"processed what was read before its trigger ({processed_at_end} < "
            f"{read_at_trigger})"
        )
    backlogs = [
        logs.source_read(r.trigger_timestamp_ms) - logs.slow_processed(r.trigger_timestamp_ms)
        for r in aligned
    ]
    assert max(backlogs) > 1000, "the aligned run was not back-pressured"
