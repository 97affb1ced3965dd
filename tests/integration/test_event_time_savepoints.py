"""Windows and timers in a savepoint: a job stopped with a savepoint (not drained, so windows
are open and timers pending) resumes at another parallelism in the other state backend, and the
output of both runs together is what one failure-free run computes."""

from __future__ import annotations

import pytest

from barrierflow.datastream import StreamExecutionEnvironment
from tests.integration.test_savepoints import wait_for_checkpoints
from tests.jobs import event_time

pytestmark = pytest.mark.spark

N = 12000


@pytest.mark.parametrize(("kind", "first_backend"), [("window", "hashmap"), ("timers", "rocksdb")])
def test_open_windows_and_pending_timers_resume_from_a_savepoint(
    spark, tmp_path, kind, first_backend
):
    out, second_backend = (
        str(tmp_path / "out"),
        {"hashmap": "rocksdb"}.get(first_backend, "hashmap"),
    )
    first = StreamExecutionEnvironment().set_parallelism(2)
    event_time.build(first, kind, N, out, str(tmp_path / "ckpt"), None, first_backend, 0.0005)
    client = first.execute_async("first")
    wait_for_checkpoints(tmp_path / "ckpt")
    savepoint = client.stop_with_savepoint(False, str(tmp_path / "savepoints")).result()
    stopped_with = event_time.committed(out)
    assert 0 < sum(stopped_with.values()) < sum(event_time.expected(N).values())

    second = StreamExecutionEnvironment().set_parallelism(3)
    event_time.build(second, kind, N, out, str(tmp_path / "ckpt2"), None, second_backend)
    second.set_restore_path(savepoint)
    second.execute("second")

    assert event_time.committed(out) == event_time.expected(N)
