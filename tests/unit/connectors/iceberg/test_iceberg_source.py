"""IcebergSource through the operator that hosts it (``OperatorHarness``), on pyiceberg's SQL
catalog on SQLite: one pinned snapshot, and new snapshots' files found by discovery and read
once. (Restore and rescale: ``tests/integration/test_connector_contracts.py``.)"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog

from barrierflow.datastream.connectors.iceberg import IcebergSource
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


def append(catalog, rows: list[tuple]) -> None:
    table = catalog.load_table("db.events")
    table.append(pa.Table.from_pylist([{"k": k, "n": n} for k, n in rows], SCHEMA))


def drain(h: OperatorHarness, polls: int = 10_000) -> list[tuple]:
    out = []
    for _ in range(polls):
        batch = h.poll(100)
        if batch is None:
            break
        out += [tuple(r) for r in batch]
    return sorted(out)


def harness(source) -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.SOURCE, source, uid="source"))


def test_a_pinned_snapshot_is_read_and_newer_ones_are_not(catalog):
    append(catalog, [("a", 1)])
    first = catalog.load_table("db.events").current_snapshot().snapshot_id
    append(catalog, [("b", 2)])
    assert drain(harness(IcebergSource(catalog, "db.events", snapshot_id=first))) == [("a", 1)]
    assert drain(harness(IcebergSource(catalog, "db.events"))) == [("a", 1), ("b", 2)]


def test_discovery_reads_the_files_new_snapshots_add_once(catalog):
    append(catalog, [("a", 1)])
    h = harness(IcebergSource(catalog, "db.events", discovery_interval=1))
    assert drain(h, 20) == [("a", 1)]
    append(catalog, [("b", 2)])
    time.sleep(0.01)  # past the interval, on the coordinator's clock
    h.coordinators.run_periodic_work()
    assert drain(h, 20) == [("b", 2)]
    h.coordinators.run_periodic_work()
    assert drain(h, 20) == []


def test_an_unknown_snapshot_or_one_with_discovery_is_refused(catalog):
    append(catalog, [("a", 1)])
    with pytest.raises(ConfigurationError, match="no snapshot 42"):
        drain(harness(IcebergSource(catalog, "db.events", snapshot_id=42)))
    with pytest.raises(ConfigurationError, match="give one or the other"):
        IcebergSource(catalog, "db.events", snapshot_id=1, discovery_interval=1000)
