"""A slow operator back-pressures the source: the source never runs further ahead of it than
the credits of its input channel allow, instead of reading all of its input at once."""

from __future__ import annotations

import os
import time
from pathlib import Path

import cloudpickle
import pytest

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction, MapFunction

pytestmark = pytest.mark.spark

N = 40_000
BUFFER = 1024
CREDITS = 4


class ReportProgress(MapFunction):
    """At the source: publishes how far the source has read."""

    def __init__(self, path: str) -> None:
        self.path = path

    def map(self, value):
        if value % 100 == 0:
            tmp = f"{self.path}.tmp"
            with open(tmp, "w") as f:
                f.write(str(value))
            os.replace(tmp, self.path)
        return value


class SlowCount(KeyedProcessFunction):
    """Slow on purpose; emits how far ahead of it the source is, every 100 records."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.processed = 0

    def process_element(self, value, ctx):
        time.sleep(0.00005)
        self.processed += 1
        if self.processed % 100 == 0:
            with open(self.path) as f:
                read = int(f.read() or 0)
            yield [self.processed, read - self.processed]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def test_a_slow_consumer_bounds_how_far_the_source_reads_ahead(spark, tmp_path):
    progress = str(tmp_path / "progress")
    with open(progress, "w") as f:
        f.write("0")
    env = StreamExecutionEnvironment().set_parallelism(1)
    (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .map(ReportProgress(progress))
        .key_by(lambda x: x % 7)
        .process(SlowCount(progress))
        .sink_to(FileSink(str(tmp_path / "out")))
    )
    env.execute("back-pressure")

    from tests.jobs.odd_even import read_committed

    lags = [lag for _, lag in read_committed(str(tmp_path / "out"))]
    assert len(lags) == N // 100
    # In flight at most: the credited buffers, the one being filled, the one being processed,
    # plus the staleness of the progress file. Without back-pressure the lag would reach ~N.
    bound = (CREDITS + 2) * BUFFER + 200
    assert max(lags) <= bound, f"the source ran {max(lags)} records ahead (bound {bound})"
    assert max(lags) > BUFFER, "no lag at all: the consumer was not slower than the source"


def test_a_savepoint_under_back_pressure_completes_aligned_and_reports_its_duration(
    spark, tmp_path
):
    """The barrier waits behind the buffered records (aligned, as a savepoint always is), so it
    takes about as long as they take to process; it completes all the same."""
    from barrierflow.protocol.checkpoint_barrier import CheckpointKind

    progress = str(tmp_path / "progress")
    with open(progress, "w") as f:
        f.write("0")
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(1)
    env.enable_checkpointing(60_000)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .map(ReportProgress(progress))
        .key_by(lambda x: x % 7)
        .process(SlowCount(progress))
        .sink_to(FileSink(str(tmp_path / "out")))
    )
    client = env.execute_async("back-pressured-savepoint")
    deadline = time.monotonic() + 60
    while int(Path(progress).read_text() or 0) < 3 * BUFFER:  # the pipeline is full
        assert time.monotonic() < deadline
        time.sleep(0.05)
    path = client.trigger_savepoint(str(tmp_path / "savepoints")).result()
    result = client.get_job_execution_result().result(120)
    (record,) = [r for r in result.checkpoint_history if r.kind is CheckpointKind.SAVEPOINT]
    assert record.external_path == path and record.status.value == "COMPLETED"
    assert record.duration_ms > 0 and {s.vertex for s in record.subtasks} == {"v0", "v1"}
    assert os.path.exists(f"{path}/_metadata")
