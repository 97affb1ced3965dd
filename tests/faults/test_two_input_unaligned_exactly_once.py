"""A back-pressured keyed connect with unaligned checkpoints, failed while its latest checkpoint
holds data in flight into both inputs of the two-input operator: the committed output equals
a failure-free run's and what the job must compute, record by record. After a SIGKILL and an
in-job restart, and after a restore at another parallelism (each input's records split by
that input's own key selector)."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobExecutionError
from tests.jobs import backpressured_connect, odd_even
from tests.jobs.backpressured_connect import UNALIGNED, Fail

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 20_000


def _committed(base) -> list:
    return sorted(odd_even.read_committed(str(base / "out")))


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory) -> list:
    """The failure-free output (aligned checkpoints)."""
    base = tmp_path_factory.mktemp("golden")
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    backpressured_connect.build(env, N, str(base / "out"), str(base / "ckpt"))
    env.execute("golden")
    records = _committed(base)
    assert records == backpressured_connect.expected(N)
    return records


def _restored_record(result):
    (restore,) = result.restores
    return next(r for r in result.checkpoint_history if r.checkpoint_id == restore.checkpoint_id)


def test_a_kill_with_data_in_flight_into_both_inputs_commits_exactly_once(spark, tmp_path, golden):
    base = tmp_path / "kill"
    fail = Fail(N // 4, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    backpressured_connect.build(env, N, str(base / "out"), str(base / "ckpt"), UNALIGNED, fail)
    result = env.execute("kill")

    assert (base / "fired").exists(), "the kill never fired"
    assert result.attempts == 2
    restored = _restored_record(result)
    assert restored.unaligned and restored.persisted_data > 0
    assert _committed(base) == golden


def test_data_in_flight_into_both_inputs_restores_at_another_parallelism(spark, tmp_path, golden):
    base = tmp_path / "rescaled"
    first = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    fail = Fail(N // 4, str(base / "failed"), str(base / "ckpt"), kill=False)
    backpressured_connect.build(
        first, N, str(base / "out"), str(base / "ckpt"), UNALIGNED, fail, restarts=0
    )
    with pytest.raises(JobExecutionError):
        first.execute("first")
    (job_root,) = (base / "ckpt").iterdir()
    newest = max(CheckpointDirectory(str(job_root)).list_completed())
    metadata = CheckpointDirectory(str(job_root)).read_metadata(newest)
    assert any(s.channel_state for s in metadata.operator("count").subtasks)

    second = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(3)
    second.set_restore_path(str(job_root / f"chk-{newest}"))
    backpressured_connect.build(second, N, str(base / "out"), str(base / "ckpt2"), UNALIGNED)
    result = second.execute("second")

    assert result.restores[0].checkpoint_id == newest
    assert _committed(base) == golden
