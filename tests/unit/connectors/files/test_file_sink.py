"""FileSink: JSON Lines part files committed by two-phase commit (real files in tmp_path)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.file_committer import FileCommitter
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.connectors.files.file_sink import FileSink
from barrierflow.connectors.files.parquet import ParquetWriterFactory
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.connectors.interfaces.versioned_codec import decode_stored
from barrierflow.datastream.connectors.base import SinkWriterContext
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


def visible(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if not n.startswith((".", "_")))


def hidden(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def read_lines(path) -> list:
    with open(path, "rb") as f:
        return [json.loads(line) for line in f]


def writer(directory, subtask: int = 0):
    return FileSink(str(directory)).create_writer(
        SinkWriterContext("job", "job", "sink", subtask, subtask + 1, attempt=0)
    )


def committed(committables: list[FileCommittable], checkpoint_id: int = 1, subtask: int = 0):
    return [Committable(checkpoint_id, subtask, c) for c in committables]


def commit(directory, committables: list[FileCommittable]) -> None:
    """What the framework does when their checkpoint completes."""
    FileCommitter(str(directory)).commit(committed(committables))


def test_prepare_commit_makes_a_hidden_pending_file_and_nothing_visible(tmp_path):
    w = writer(tmp_path, subtask=3)
    w.write([1, "two", {"three": [3]}])
    w.write([None])
    assert visible(tmp_path) == []
    (committable,) = w.prepare_commit(7)
    assert hidden(tmp_path) == [committable.pending]
    assert committable.pending.startswith(".part-3-")
    assert committable.pending.endswith(".pending")
    assert committable.final.startswith("part-3-000007-")
    assert committable.final.endswith(".jsonl")
    assert visible(tmp_path) == []
    assert read_lines(tmp_path / committable.pending) == [1, "two", {"three": [3]}, None]


def test_prepare_commit_without_records_has_nothing_to_commit(tmp_path):
    w = writer(tmp_path)
    w.write([])
    assert w.prepare_commit(1) == []
    assert os.listdir(tmp_path) == []


def test_each_checkpoint_gets_its_own_part_file(tmp_path):
    w = writer(tmp_path)
    w.write(["a"])
    first = w.prepare_commit(1)
    w.write(["b"])
    second = w.prepare_commit(2)
    commit(tmp_path, first + second)
    assert visible(tmp_path) == sorted([first[0].final, second[0].final])
    assert read_lines(tmp_path / second[0].final) == ["b"]


def test_commit_makes_the_part_file_visible(tmp_path):
    w = writer(tmp_path)
    w.write([{"k": 1}, {"k": 2}])
    committables = w.prepare_commit(4)
    commit(tmp_path, committables)
    assert visible(tmp_path) == [committables[0].final]
    assert hidden(tmp_path) == []
    assert read_lines(tmp_path / committables[0].final) == [{"k": 1}, {"k": 2}]


def test_commit_is_idempotent(tmp_path):
    w = writer(tmp_path)
    w.write(["x"])
    committables = w.prepare_commit(4)
    commit(tmp_path, committables)
    commit(tmp_path, committables)
    commit(tmp_path, committables)  # e.g. again after a failover
    assert visible(tmp_path) == [committables[0].final]
    assert read_lines(tmp_path / committables[0].final) == ["x"]


def test_commit_of_a_vanished_pending_file_names_it(tmp_path):
    w = writer(tmp_path)
    w.write(["x"])
    committables = w.prepare_commit(4)
    os.remove(tmp_path / committables[0].pending)
    with pytest.raises(RuntimeError, match=committables[0].pending):
        commit(tmp_path, committables)


def recover(directory, subtask: int, parallelism: int, restored: list[Committable]) -> None:
    """What the framework does when a subtask of a restored job opens: its committer commits
    the restored committables it answers for, then cleans up."""
    c = FileCommitter(str(directory))
    c.commit([r for r in restored if r.subtask % parallelism == subtask])
    c.abort_lingering(Recovery(subtask, parallelism, parallelism, tuple(restored)))


def test_recovery_commits_the_restored_committables_and_deletes_only_its_subtasks_leftovers(
    tmp_path,
):
    old = writer(tmp_path, subtask=1)
    old.write(["in checkpoint"])
    restored = old.prepare_commit(5)
    old.write(["after checkpoint"])
    old.prepare_commit(6)  # pending, but checkpoint 6 never completed
    old.write(["in progress"])
    old.close()  # the task died here: an .inprogress file is left
    other = writer(tmp_path, subtask=2)
    other.write(["other subtask"])
    others_pending = other.prepare_commit(6)[0].pending
    other.write(["other in progress"])
    other.close()
    others_files = [n for n in hidden(tmp_path) if n.startswith(".part-2-")]
    assert len(hidden(tmp_path)) == 5

    recover(tmp_path, 1, 3, committed(restored, 5, subtask=1))

    assert visible(tmp_path) == [restored[0].final]
    assert read_lines(tmp_path / restored[0].final) == ["in checkpoint"]
    assert hidden(tmp_path) == others_files
    assert others_pending in others_files


def test_recovery_after_a_commit_already_happened_is_a_no_op_for_those_files(tmp_path):
    w = writer(tmp_path, subtask=0)
    w.write(["done"])
    committables = w.prepare_commit(2)
    commit(tmp_path, committables)
    recover(tmp_path, 0, 1, committed(committables, 2))
    assert visible(tmp_path) == [committables[0].final]


def test_recovery_after_scaling_in_commits_every_committable_of_the_checkpoint(tmp_path):
    # four old subtasks each prepared a part file for checkpoint 9, which completed
    spec = operator(TransformationKind.SINK, FileSink(str(tmp_path)), uid="sink")
    old = OperatorHarness.subtasks(spec, 4)
    for subtask, h in enumerate(old):
        h.process([f"from {subtask}"])
    states = [h.snapshot(9) for h in old]
    # the job restarts with parallelism 2; each new subtask commits its share when it opens
    for h in OperatorHarness.rescaled(spec, states, 2):
        h.close()
    assert [read_lines(tmp_path / f) for f in visible(tmp_path)] == [
        [f"from {subtask}"] for subtask in range(4)
    ]
    assert hidden(tmp_path) == []


def test_a_record_that_cannot_be_json_encoded_raises_record_encoding_error_naming_it(tmp_path):
    w = writer(tmp_path)
    w.write(["before"])
    with pytest.raises(RecordEncodingError, match=r"record \{'bad': <object object at"):
        w.write(["fine", {"bad": object()}, "also fine"])
    # the batch with the bad record wrote nothing
    (committable,) = w.prepare_commit(1)
    assert read_lines(tmp_path / committable.pending) == ["before"]


def _cyclic() -> list:
    record: list = []
    record.append(record)
    return record


@pytest.mark.parametrize("record", ["caf\udce9", _cyclic()], ids=["lone-surrogate", "cyclic"])
def test_an_unencodable_string_or_cyclic_record_raises_record_encoding_error(tmp_path, record):
    with pytest.raises(RecordEncodingError, match="cannot write record"):
        writer(tmp_path).write([record])


def test_file_sink_needs_a_directory_and_accepts_a_file_uri(tmp_path):
    with pytest.raises(ValueError, match="needs a directory"):
        FileSink("")
    sink = FileSink(f"file://{tmp_path}/out")
    w = sink.create_writer(SinkWriterContext("job", "job", "sink", 0, 1, 0))
    w.write([1])
    commit(tmp_path, w.prepare_commit(1))
    assert len(visible(tmp_path / "out")) == 1


def test_a_committable_is_committed_where_it_was_written_whatever_the_writers_directory(tmp_path):
    w = writer(tmp_path / "first")
    w.write(["x"])
    committables = w.prepare_commit(3)
    commit(tmp_path / "second", committables)  # a job restored with another directory
    assert visible(tmp_path / "first") == [committables[0].final]
    assert not (tmp_path / "second").exists()


def test_a_committable_of_the_dict_layout_without_a_directory_is_committed_in_the_sinks(tmp_path):
    w = writer(tmp_path)
    w.write(["x"])
    (written,) = w.prepare_commit(3)
    # as checkpoints kept it before committables had codecs and named their directory
    stored = {"pending": written.pending, "final": written.final}
    committable = decode_stored(FileSink(str(tmp_path)).committable_codec(), stored)
    assert committable == written
    commit(tmp_path, [committable])
    assert visible(tmp_path) == [committable.final]


# --- the bulk format: Parquet ------------------------------------------------------------------

SCHEMA = pa.schema([("key", pa.string()), ("count", pa.int64())])


def parquet_writer(directory, subtask: int = 0):
    sink = FileSink.for_bulk_format(
        str(directory), ParquetWriterFactory(SCHEMA, row_group_size=2)
    ).build()
    return sink.create_writer(SinkWriterContext("job", "job", "sink", subtask, 1, 0))


def test_parquet_part_files_are_rolled_at_each_barrier_and_hold_dicts_and_tuples(tmp_path):
    w = parquet_writer(tmp_path)
    w.write([{"key": "a", "count": 1}, {"key": "b", "count": 2}, {"key": "a", "count": 3}])
    first = w.prepare_commit(1)
    w.write([("c", 4)])
    second = w.prepare_commit(2)
    assert visible(tmp_path) == []
    commit(tmp_path, first + second)

    names = visible(tmp_path)
    assert [n.split("-")[2] for n in names] == ["000001", "000002"]
    assert all(n.endswith(".parquet") for n in names)
    table = pq.read_table(tmp_path / names[0])
    assert table.schema == SCHEMA
    assert table.to_pylist() == [
        {"key": "a", "count": 1}, {"key": "b", "count": 2}, {"key": "a", "count": 3},
    ]  # fmt: skip
    assert pq.ParquetFile(tmp_path / names[0]).metadata.num_row_groups == 2  # row_group_size
    assert pq.read_table(tmp_path / names[1]).to_pylist() == [{"key": "c", "count": 4}]


def test_a_record_that_does_not_fit_the_parquet_schema_is_named(tmp_path):
    w = parquet_writer(tmp_path)
    w.write([("a", 1)])
    with pytest.raises(
        RecordEncodingError, match=r"record \('b', 'two'\) as Parquet.*count: int64"
    ):
        w.write([("ok", 2), ("b", "two")])
    with pytest.raises(RecordEncodingError, match=r"record \('c',\)"):
        w.write([("c",)])
    with pytest.raises(RecordEncodingError, match=r"record \{'key': 'd', 'cnt': 1\}"):
        w.write([{"key": "ok", "count": 1}, {"key": "d", "cnt": 1}])  # a misspelled field
    with pytest.raises(RecordEncodingError, match=r"record \('e', 2\)"):
        w.write([{"key": "ok", "count": 1}, ("e", 2)])  # a tuple among dicts
    (committable,) = w.prepare_commit(1)
    commit(tmp_path, [committable])
    assert pq.read_table(tmp_path / committable.final).to_pylist() == [{"key": "a", "count": 1}]


def test_parquet_writer_factory_refuses_what_is_not_a_schema():
    with pytest.raises(ConfigurationError, match=r"needs a pyarrow\.Schema"):
        ParquetWriterFactory({"key": "string"})
    with pytest.raises(ValueError, match="needs a file format"):
        FileSink("/tmp/x", file_format="parquet")
