"""SparkTableSink through the operator that hosts it (``OperatorHarness``), on a local
directory described by a catalog of directories: files staged where Spark does not read them
until their checkpoint completes, one commit per checkpoint with its marker and a refresh, a
replayed commit skipped (whole, and after a crash halfway), and tables refused by name. (The
contracts every sink keeps are in ``tests/integration/test_connector_contracts.py``; Spark's
own catalog and reads in ``tests/faults/test_table_sinks_exactly_once.py``.)"""

from __future__ import annotations

import glob
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from barrierflow.common import Types
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.connectors.spark_table.spark_table_committable import SparkTableCommittable
from barrierflow.datastream.connectors.spark_table import CatalogTable, SparkTableSink
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator
from tests.jobs.directory_catalog import DirectoryCatalog

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


def harness(sink, parallelism=1):
    return OperatorHarness.subtasks(
        operator(TransformationKind.SINK, sink, uid="sink"), parallelism
    )


def table_rows(path) -> list[tuple]:
    """What Spark's file listing reads: the table directory's files, not those under "_"."""
    files = glob.glob(os.path.join(path, "*.parquet"))
    return sorted(tuple(r.values()) for f in files for r in pq.read_table(f).to_pylist())


def _sink(tmp_path) -> tuple[SparkTableSink, DirectoryCatalog, str]:
    path = str(tmp_path / "t")
    os.makedirs(path)
    catalog = DirectoryCatalog.parquet("db.t", path, SCHEMA)
    return SparkTableSink("db.t", catalog), catalog, path


def _marker(path) -> int:
    (marker,) = glob.glob(os.path.join(path, "_barrierflow", "committed", "*.json"))
    with open(marker) as f:
        return json.load(f)["checkpoint_id"]


def test_files_are_staged_out_of_the_table_until_their_checkpoint_commits(tmp_path):
    sink, _, path = _sink(tmp_path)
    a, b = harness(sink, 2)
    a.process([("a", 1)])
    b.process([("b", 2)])
    a.snapshot(1), b.snapshot(1)
    assert table_rows(path) == []
    assert len(glob.glob(os.path.join(path, "_barrierflow", "staging", "*", "*"))) == 2

    a.notify_complete(1), b.notify_complete(1)
    a.process([("a", 3)])
    a.snapshot(2), b.snapshot(2)
    a.notify_complete(2), b.notify_complete(2)
    assert table_rows(path) == [("a", 1), ("a", 3), ("b", 2)]
    assert _marker(path) == 2
    assert glob.glob(os.path.join(path, "_barrierflow", "staging", "*", "*")) == []


def test_the_catalog_refreshes_the_table_after_each_commit_and_each_replay(tmp_path):
    sink, catalog, _ = _sink(tmp_path)
    (h,) = harness(sink)
    h.process([("a", 1)])
    h.snapshot(1)
    assert catalog.refreshed == []
    h.notify_complete(1)
    assert catalog.refreshed == ["db.t"]
    # a replay may follow a commit that died before its refresh
    sink.create_global_committer().commit(1, [])
    assert catalog.refreshed == ["db.t", "db.t"]


def test_a_commit_replayed_for_a_checkpoint_the_marker_holds_is_skipped(tmp_path):
    sink, _, path = _sink(tmp_path)
    (h,) = harness(sink)
    h.process([("a", 1)])
    h.snapshot(3)
    h.notify_complete(3)
    (app,) = os.listdir(os.path.join(path, "_barrierflow", "staging"))

    # the same checkpoint, and an older one, again (after a kill between completion and
    # commit, or a failover): skipped, though the files they name were never staged
    committer = sink.create_global_committer()
    for checkpoint_id in (3, 2):
        data = SparkTableCommittable(app, "never-written.parquet")
        committer.commit(checkpoint_id, [Committable(checkpoint_id, 0, data)])
    assert table_rows(path) == [("a", 1)]
    assert _marker(path) == 3


def test_a_commit_replayed_after_a_crash_halfway_moves_only_what_is_left(tmp_path):
    sink, _, path = _sink(tmp_path)
    a, b = harness(sink, 2)
    a.process([("a", 1)])
    b.process([("b", 2)])
    a.snapshot(1), b.snapshot(1)
    staged = sorted(glob.glob(os.path.join(path, "_barrierflow", "staging", "*", "*")))
    app = os.path.basename(os.path.dirname(staged[0]))
    committables = [
        Committable(1, s, SparkTableCommittable(app, os.path.basename(f)))
        for s, f in enumerate(staged)
    ]
    committer = sink.create_global_committer()
    committer.commit(1, committables)
    # as if the crash came after the first move: the second file still staged, no marker
    second = max(glob.glob(os.path.join(path, "*.parquet")))  # subtask 1's
    os.rename(second, staged[1])
    os.remove(os.path.join(path, "_barrierflow", "committed", f"{app}.json"))
    assert table_rows(path) == [("a", 1)]

    committer.commit(1, committables)
    assert table_rows(path) == [("a", 1), ("b", 2)]
    assert _marker(path) == 1


def test_a_staged_file_lost_before_its_commit_fails_it_by_name(tmp_path):
    sink, _, _ = _sink(tmp_path)
    committer = sink.create_global_committer()
    data = SparkTableCommittable("app", "gone.parquet")
    with pytest.raises(FileNotFoundError, match=r"the staged file .*gone\.parquet"):
        committer.commit(1, [Committable(1, 0, data)])


def test_a_stream_declared_with_the_table_s_columns_writes_named_rows(tmp_path):
    sink, _, path = _sink(tmp_path)
    sink.set_input_type(Types.ROW_NAMED(["k", "n"], [Types.STRING(), Types.LONG()]))
    (h,) = harness(sink)
    h.process([{"k": "a", "n": 1}])
    h.snapshot(1)
    h.notify_complete(1)
    assert table_rows(path) == [("a", 1)]


@pytest.mark.parametrize(
    ("table", "declared", "message"),
    [
        (CatalogTable("db.t", "/t", "delta", SCHEMA), None, "a delta table; .* only to Parquet"),
        (
            CatalogTable("db.t", "/t", "parquet", SCHEMA, ("k",)),
            None,
            r"partitioned by \['k'\]",
        ),
        (
            CatalogTable("db.t", "/t", "parquet", SCHEMA),
            Types.ROW_NAMED(["k"], [Types.STRING()]),
            r"the table has columns \(k: string, n: int64\), the stream is declared as",
        ),
    ],
)
def test_a_table_the_sink_cannot_write_is_refused_by_check(table, declared, message):
    sink = SparkTableSink("db.t", DirectoryCatalog(table))
    sink.set_input_type(declared)
    with pytest.raises(ConfigurationError, match=message):
        sink.check()


def test_a_missing_table_and_a_missing_catalog_are_refused():
    with pytest.raises(ConfigurationError, match=r"no table 'db\.nope'"):
        SparkTableSink("db.nope", DirectoryCatalog()).check()
    with pytest.raises(ConfigurationError, match="has no catalog to find its table in"):
        SparkTableSink("db.t").check()
    with pytest.raises(ConfigurationError, match="needs a table name"):
        SparkTableSink("")
