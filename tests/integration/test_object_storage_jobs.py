"""Jobs on local Spark whose every file is on S3 (a real S3-protocol server,
tests/servers/s3.py): a FileSource reading s3://, checkpoints on s3://, a savepoint written to
s3:// that stops the job, and a second job restored from it, with a FileSink on s3://. The
output of both runs together is the failure-free one, record by record."""

from __future__ import annotations

import time

import cloudpickle
import pytest

from barrierflow.checkpoint.storage import locate_snapshot
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink, FileSource
from barrierflow.datastream.functions.one_input import MapFunction
from tests.jobs.odd_even import RunningSum, Throttle

pytestmark = pytest.mark.spark

N = 4000


class ToInt(MapFunction):
    def map(self, value):
        return int(value)


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def failure_free_output(n: int) -> list[list[int]]:
    """The odd/even job's output for the values 1..n read in order by one source subtask."""
    totals = [0, 0]
    out = []
    for value in range(1, n + 1):
        totals[value % 2] += value
        out.append([value % 2, value, totals[value % 2]])
    return out


def build(env: StreamExecutionEnvironment, s3, bucket: str, delay_s: float) -> None:
    env.configure(s3.configuration())
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(f"s3://{bucket}/checkpoints")
    source = env.from_source(FileSource(f"s3://{bucket}/in"), "lines").set_parallelism(1)
    (
        source.map(Throttle(delay_s, None))
        .set_parallelism(1)
        .uid("throttle")
        .map(ToInt())
        .set_parallelism(1)
        .key_by(lambda x: x % 2)
        .process(RunningSum())
        .uid("running-sum")
        .sink_to(FileSink(f"s3://{bucket}/out"))
        .uid("sink")
    )


def wait_for_a_checkpoint(s3, bucket: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not [k for k in s3.keys(bucket, "checkpoints/") if k.endswith("/_metadata")]:
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.1)


def test_a_savepoint_on_s3_stops_a_job_reading_s3_and_a_job_restored_from_it_goes_on(
    spark, s3, reset_file_systems
):
    bucket = s3.bucket()
    half = N // 2
    s3.put(bucket, "in/a.txt", "".join(f"{v}\n" for v in range(1, half + 1)).encode())
    s3.put(bucket, "in/b.txt", "".join(f"{v}\n" for v in range(half + 1, N + 1)).encode())
    s3.put(bucket, "in/_SUCCESS", b"")  # skipped, as Spark skips it

    first = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    build(first, s3, bucket, delay_s=0.002)  # about 8 s unless stopped
    client = first.execute_async("s3-savepoint")
    wait_for_a_checkpoint(s3, bucket)
    path = client.stop_with_savepoint(False, f"s3://{bucket}/savepoints").result()

    assert path.startswith(f"s3://{bucket}/savepoints/savepoint-")
    assert any(k.endswith("/_metadata") for k in s3.keys(bucket, "savepoints/"))
    _, metadata = locate_snapshot(path)
    assert metadata.is_savepoint
    before = s3.committed_records(bucket, "out/")
    assert 0 < len(before) < N, "the savepoint did not stop the job mid-stream"

    second = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    build(second, s3, bucket, delay_s=0.0)
    second.set_restore_path(path)
    result = second.execute("s3-restored")

    assert len(result.restores) == 1
    # part files are listed by name, not in the order they were written
    assert sorted(s3.committed_records(bucket, "out/")) == sorted(failure_free_output(N))
