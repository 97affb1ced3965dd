"""FileSink on S3 (a real S3-protocol server, tests/servers/s3.py): nothing is visible before
commit, pending parts are whole objects at the barrier, and commit (a copy, then a delete of the
pending object) is idempotent wherever a failover interrupts it (ADR 0009)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.file_committer import FileCommitter
from barrierflow.connectors.files.file_sink import FileSink
from barrierflow.connectors.files.parquet import ParquetWriterFactory
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.datastream.connectors.base import SinkWriterContext
from barrierflow.errors import StorageConfigError


@pytest.fixture
def out(s3):
    """An empty output directory on S3: (server, bucket, its URI)."""
    file_systems.initialize(file_systems.settings_from(Configuration(s3.configuration())))
    bucket = s3.bucket()
    yield s3, bucket, f"s3://{bucket}/out"
    file_systems.initialize(file_systems.FileSystemSettings())


def writer(uri: str, subtask: int = 0, file_format=None):
    return FileSink(uri, file_format).create_writer(
        SinkWriterContext("job", "job", "sink", subtask, subtask + 1, attempt=0)
    )


def names(s3, bucket) -> list[str]:
    return [k.removeprefix("out/") for k in s3.keys(bucket, "out/")]


def visible(s3, bucket) -> list[str]:
    return [n for n in names(s3, bucket) if not n.startswith((".", "_"))]


def lines(s3, bucket, name) -> list:
    return [json.loads(line) for line in s3.get(bucket, f"out/{name}").splitlines()]


def commit(uri: str, committables: list[FileCommittable]) -> None:
    FileCommitter(uri).commit([Committable(1, 0, c) for c in committables])


def test_records_are_invisible_until_commit_and_pending_whole_at_the_barrier(out):
    s3, bucket, uri = out
    w = writer(uri, subtask=2)
    w.write([1, "two"])
    w.write([{"three": 3}])
    assert names(s3, bucket) == []  # an upload in progress is no object at all
    (c,) = w.prepare_commit(4)
    assert names(s3, bucket) == [c.pending]
    assert c.pending.startswith(".part-2-") and c.final.startswith("part-2-000004-")
    assert lines(s3, bucket, c.pending) == [1, "two", {"three": 3}]
    commit(uri, [c])
    assert names(s3, bucket) == [c.final]
    assert lines(s3, bucket, c.final) == [1, "two", {"three": 3}]


def test_commit_is_idempotent_wherever_a_failover_interrupted_it(out):
    s3, bucket, uri = out
    w = writer(uri)
    w.write(["a"])
    (first,) = w.prepare_commit(1)
    commit(uri, [first])
    commit(uri, [first])  # repeated after a failover: a no-op
    assert names(s3, bucket) == [first.final]

    w.write(["b"])
    (second,) = w.prepare_commit(2)
    # killed between the copy and the delete: the final object and the pending one exist
    s3.put(bucket, f"out/{second.final}", s3.get(bucket, f"out/{second.pending}"))
    commit(uri, [first, second])
    assert names(s3, bucket) == sorted([first.final, second.final])
    assert lines(s3, bucket, second.final) == ["b"]


def test_commit_of_a_part_that_is_neither_pending_nor_final_fails_naming_it(out):
    _, _, uri = out
    missing = FileCommittable(uri, ".part-0-x.pending", "part-0-000001-x.jsonl")
    with pytest.raises(RuntimeError, match=r"part-0-000001-x\.jsonl"):
        commit(uri, [missing])


def test_recovery_commits_the_restored_parts_and_deletes_this_subtasks_leftovers(out):
    s3, bucket, uri = out
    w0, w1 = writer(uri, 0), writer(uri, 1)
    w0.write(["kept"])
    (restored,) = w0.prepare_commit(1)
    w0.write(["after the checkpoint"])
    w0.prepare_commit(2)  # never completed
    w1.write(["subtask 1"])
    (other,) = w1.prepare_commit(2)
    # as the framework recovers subtask 0 of 2: commits what it answers for, then cleans up
    committer = FileCommitter(uri)
    committer.commit([Committable(1, 0, restored)])
    committer.abort_lingering(Recovery(0, 2, 2, (Committable(1, 0, restored),)))
    assert visible(s3, bucket) == [restored.final]
    assert names(s3, bucket) == sorted([restored.final, other.pending])


def test_a_writer_closed_before_its_barrier_leaves_nothing(out):
    s3, bucket, uri = out
    w = writer(uri)
    w.write(["lost with the attempt"])
    w.close()
    assert names(s3, bucket) == []


def test_parquet_parts_on_s3_read_back_whole(out):
    s3, bucket, uri = out
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    w = writer(uri, file_format=ParquetWriterFactory(schema, row_group_size=2))
    w.write([(1, "a"), (2, "b"), (3, "c")])
    commit(uri, w.prepare_commit(1))
    (name,) = visible(s3, bucket)
    table = pq.read_table(io.BytesIO(s3.get(bucket, f"out/{name}")))
    assert table.to_pylist() == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]


def test_the_driver_check_names_a_missing_bucket_before_the_job_runs(out):
    s3, bucket, uri = out
    FileSink(uri).check()
    assert names(s3, bucket) == []  # the probe is gone
    with pytest.raises(StorageConfigError) as e:
        FileSink("s3://no-such-bucket/out").check()
    assert "s3://no-such-bucket/out" in str(e.value)
    assert "bucket 'no-such-bucket' does not exist" in str(e.value)
