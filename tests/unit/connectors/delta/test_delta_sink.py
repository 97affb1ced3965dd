"""DeltaSink through the operator that hosts it (``OperatorHarness``), on a local table:
one Delta transaction per checkpoint with its SetTransaction, a replayed commit skipped,
partitioned appends, a schema from ``Types.ROW_NAMED``, and configuration refused by name.
(The contracts every sink keeps are in ``tests/integration/test_connector_contracts.py``.)"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from barrierflow.common import Types
from barrierflow.connectors.delta.delta_committable import DeltaAddFile, DeltaCommittable
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.datastream.connectors.delta import DeltaSink
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


def harness(sink, parallelism=1):
    return OperatorHarness.subtasks(
        operator(TransformationKind.SINK, sink, uid="sink"), parallelism
    )


def rows(path) -> list[tuple]:
    table = DeltaTable(path).to_pyarrow_table()
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=str)


def test_each_checkpoint_is_one_transaction_whose_version_is_the_checkpoint_id(tmp_path):
    path = str(tmp_path / "t")
    a, b = harness(DeltaSink(path, SCHEMA), 2)
    a.process([("a", 1)])
    b.process([("b", 2)])
    a.snapshot(1), b.snapshot(1)
    a.notify_complete(1), b.notify_complete(1)
    a.process([("a", 3)])
    a.snapshot(2), b.snapshot(2)
    a.notify_complete(2), b.notify_complete(2)

    table = DeltaTable(path)
    assert table.version() == 1  # two commits: versions 0 and 1
    assert rows(path) == [("a", 1), ("a", 3), ("b", 2)]
    assert table.transaction_version(_app_id(path)) == 2
    assert table.history()[0]["barrierflow.checkpoint-id"] == 2


def test_a_commit_replayed_for_a_checkpoint_the_table_holds_is_skipped(tmp_path):
    path = str(tmp_path / "t")
    sink = DeltaSink(path, SCHEMA)
    (h,) = harness(sink)
    h.process([("a", 1)])
    h.snapshot(3)
    h.notify_complete(3)
    version = DeltaTable(path).version()

    # the same checkpoint, and an older one, again (after a kill between completion and
    # commit, or a failover): skipped, though the files they name do not even exist
    committer = sink.create_global_committer()
    files = [DeltaAddFile("never-written.parquet", 1, {}, 0, {"numRecords": 1})]
    for checkpoint_id in (3, 2):
        data = DeltaCommittable(_app_id(path), files)
        committer.commit(checkpoint_id, [Committable(checkpoint_id, 0, data)])
    assert DeltaTable(path).version() == version
    assert rows(path) == [("a", 1)]


def _app_id(path: str) -> str:
    """The app id of the table's first SetTransaction, read from its log."""
    log = os.path.join(path, "_delta_log", "00000000000000000000.json")
    with open(log) as f:
        actions = [json.loads(line) for line in f]
    return next(a["txn"]["appId"] for a in actions if "txn" in a)


def test_partitioned_appends_write_a_directory_per_value_and_read_back_whole(tmp_path):
    path = str(tmp_path / "t")
    (h,) = harness(DeltaSink(path, SCHEMA, partition_by="k"))
    h.process([("a", 1), ("b/x", 2), (None, 3), ("a", 4)])
    h.snapshot(1)
    h.notify_complete(1)

    table = DeltaTable(path)
    assert table.metadata().partition_columns == ["k"]
    assert rows(path) == sorted([("a", 1), ("a", 4), ("b/x", 2), (None, 3)], key=str)
    assert sorted(d.name for d in tmp_path.joinpath("t").iterdir() if d.is_dir()) == [
        "_delta_log", "k=__HIVE_DEFAULT_PARTITION__", "k=a", "k=b%2Fx",
    ]  # fmt: skip


def test_a_schema_from_types_row_named_takes_named_rows_and_dicts(tmp_path):
    path = str(tmp_path / "t")
    schema = Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()])
    (h,) = harness(DeltaSink(path, schema))
    h.process([{"k": "a", "n": 1}, {"n": 2, "k": "b"}])
    h.snapshot(1)
    h.notify_complete(1)
    assert rows(path) == [("a", 1), ("b", 2)]
    assert DeltaTable(path).schema().to_arrow().field("n").type == pa.int64()


def test_a_record_that_does_not_fit_is_named(tmp_path):
    (h,) = harness(DeltaSink(str(tmp_path / "t"), SCHEMA))
    with pytest.raises(Exception, match=r"record \('a', 'one'\) as Delta table") as e:
        h.process([("a", "one")])
    assert isinstance(e.value.__cause__, RecordEncodingError)


def test_an_existing_table_with_other_columns_or_partitions_is_refused_by_check(tmp_path):
    path = str(tmp_path / "t")
    (h,) = harness(DeltaSink(path, SCHEMA))
    h.process([("a", 1)])
    h.snapshot(1)
    h.notify_complete(1)

    other = pa.schema([("k", pa.string()), ("n", pa.float64())])
    with pytest.raises(ConfigurationError, match="has columns"):
        DeltaSink(path, other).check()
    with pytest.raises(ConfigurationError, match=r"partitioned by \[\], the sink by \['k'\]"):
        DeltaSink(path, SCHEMA, partition_by=["k"]).check()
    sink = DeltaSink(path)  # no schema: the table's
    sink.check()
    assert sink.schema.names == ["k", "n"]


def test_a_missing_table_without_a_schema_and_unknown_partition_columns_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="no schema to create it with"):
        DeltaSink(str(tmp_path / "none")).check()
    with pytest.raises(ConfigurationError, match=r"partition columns \['day'\] are not"):
        DeltaSink(str(tmp_path / "t"), SCHEMA, partition_by="day")


def test_without_a_schema_the_stream_s_declared_row_type_is_the_table_s(tmp_path):
    from barrierflow.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment()
    row = Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()])
    sink = DeltaSink(str(tmp_path / "t"), partition_by="k")
    env.from_collection([("a", 1)], type_info=row).sink_to(sink)
    assert sink.schema == SCHEMA
    with pytest.raises(ConfigurationError, match="has no table column type"):
        DeltaSink(str(tmp_path / "u")).set_input_type(Types.ROW_NAMED(["x"], [Types.BIG_INT()]))
