"""IcebergSink through the operator that hosts it (``OperatorHarness``), on pyiceberg's SQL
catalog on SQLite: one append snapshot per checkpoint recording it, a replayed commit skipped,
catalogs by name or object, and configuration refused by name. (The contracts every sink keeps
are in ``tests/integration/test_connector_contracts.py``.)"""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.transforms import BucketTransform

from barrierflow.connectors.iceberg.iceberg_committable import IcebergCommittable
from barrierflow.connectors.iceberg.iceberg_committer import max_committed_checkpoint
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.datastream.connectors.iceberg import IcebergSink
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


@pytest.fixture
def catalog(tmp_path):
    properties = {
        "type": "sql",
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/warehouse",
    }
    catalog = load_catalog("local", **properties)
    catalog.create_namespace("db")
    catalog.create_table("db.events", SCHEMA)
    return catalog


def harness(sink, parallelism=1):
    spec = operator(TransformationKind.SINK, sink, uid="sink")
    return OperatorHarness.subtasks(spec, parallelism)


def rows(catalog) -> list[tuple]:
    table = catalog.load_table("db.events").scan().to_arrow()
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_each_checkpoint_is_one_snapshot_recording_its_id_job_and_sink(catalog):
    a, b = harness(IcebergSink(catalog, "db.events"), 2)  # a catalog object
    a.process([("a", 1)])
    b.process([("b", 2)])
    a.snapshot(1), b.snapshot(1)
    a.notify_complete(1), b.notify_complete(1)
    b.process([("b", 3)])
    a.snapshot(2), b.snapshot(2)
    a.notify_complete(2), b.notify_complete(2)

    snapshots = catalog.load_table("db.events").metadata.snapshots
    assert [s.summary["barrierflow.checkpoint-id"] for s in snapshots] == ["1", "2"]
    assert {s.summary["barrierflow.sink-uid"] for s in snapshots} == {"sink"}
    assert [s.summary["added-records"] for s in snapshots] == ["2", "1"]
    assert rows(catalog) == [("a", 1), ("b", 2), ("b", 3)]


def test_a_commit_replayed_for_a_checkpoint_the_table_holds_is_skipped(catalog, tmp_path):
    sink = IcebergSink("local", "db.events", catalog.properties)  # by name and properties
    (h,) = harness(sink)
    h.process([("a", 1)])
    h.snapshot(4)
    h.notify_complete(4)
    table = catalog.load_table("db.events")
    job_id = table.current_snapshot().summary["barrierflow.job-id"]
    assert max_committed_checkpoint(table, job_id, "sink") == 4
    assert max_committed_checkpoint(table, "another job", "sink") is None

    committer = sink.create_global_committer()
    data = IcebergCommittable(job_id, "sink", [f"{tmp_path}/never-written.parquet"])
    for checkpoint_id in (4, 3):  # after a kill between completion and commit, or a failover
        committer.commit(checkpoint_id, [Committable(checkpoint_id, 0, data)])
    assert len(catalog.load_table("db.events").metadata.snapshots) == 1
    assert rows(catalog) == [("a", 1)]


def test_a_table_partitioned_by_identity_gets_a_file_per_partition_and_checkpoint(catalog):
    parts = catalog.create_table("db.parts", SCHEMA)
    with parts.update_spec() as update:
        update.add_identity("k")
    sink = IcebergSink(catalog, "db.parts")
    sink.check()
    (h,) = harness(sink)
    h.process([("a", 1), ("b", 2), ("a", 3), (None, 4)])
    h.snapshot(1)
    h.notify_complete(1)

    table = catalog.load_table("db.parts")
    files = {t.file.partition[0]: t.file.record_count for t in table.scan().plan_files()}
    assert files == {"a": 2, "b": 1, None: 1}
    assert table.scan(row_filter="k == 'a'").to_arrow().num_rows == 2  # pruned by partition
    assert table.current_snapshot().summary["barrierflow.checkpoint-id"] == "1"


def test_a_missing_table_other_partition_transforms_and_a_bad_catalog_are_refused(catalog):
    with pytest.raises(ConfigurationError, match=r"has no table 'db\.nothing'; create it"):
        IcebergSink(catalog, "db.nothing").check()
    buckets = catalog.create_table("db.buckets", SCHEMA)
    with buckets.update_spec() as update:
        update.add_field("n", BucketTransform(4), "n_bucket")
    with pytest.raises(ConfigurationError, match="partitioned by identity"):
        IcebergSink(catalog, "db.buckets").check()
    with pytest.raises(ConfigurationError, match="catalog must be a catalog name"):
        IcebergSink(42, "db.events")
