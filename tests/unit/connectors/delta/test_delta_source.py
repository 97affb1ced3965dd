"""DeltaSource through the operator that hosts it (``OperatorHarness``), on local tables:
partition columns typed back from the log, one pinned version, and new versions' files found
by discovery and read once. (Restore and rescale: ``tests/integration/test_connector_contracts
.py``.)"""

from __future__ import annotations

import datetime
import time

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from barrierflow.datastream.connectors.delta import DeltaSource
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

SCHEMA = pa.schema([("day", pa.date32()), ("n", pa.int64())])
DAY = datetime.date(2024, 1, 2)


def drain(h: OperatorHarness, polls: int | None = None) -> list[tuple]:
    out = []
    for _ in range(polls or 10_000):
        batch = h.poll(100)
        if batch is None:
            break
        out += [tuple(r) for r in batch]
    return sorted(out, key=str)


def source_harness(source) -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.SOURCE, source, uid="source"))


def append(path, rows: list[tuple], **kwargs) -> None:
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)
    write_deltalake(path, table, mode="append", **kwargs)


def test_partition_columns_come_back_typed_from_the_log(tmp_path):
    path = str(tmp_path / "t")
    append(path, [(DAY, 1), (None, 2), (DAY, 3)], partition_by=["day"])
    h = source_harness(DeltaSource(path))
    assert drain(h) == sorted([(DAY, 1), (None, 2), (DAY, 3)], key=str)


def test_a_pinned_version_is_read_and_newer_ones_are_not(tmp_path):
    path = str(tmp_path / "t")
    append(path, [(DAY, 1)])
    append(path, [(DAY, 2)])
    assert drain(source_harness(DeltaSource(path, version=0))) == [(DAY, 1)]


def test_discovery_reads_the_files_new_versions_add_once(tmp_path):
    path = str(tmp_path / "t")
    append(path, [(DAY, 1)])
    h = source_harness(DeltaSource(path, discovery_interval=1))
    assert drain(h, 20) == [(DAY, 1)]
    append(path, [(DAY, 2)])
    time.sleep(0.01)  # past the interval, on the coordinator's clock
    h.coordinators.run_periodic_work()
    assert drain(h, 20) == [(DAY, 2)]
    h.coordinators.run_periodic_work()
    assert drain(h, 20) == []


def test_a_missing_table_or_a_version_with_discovery_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="no Delta table at"):
        DeltaSource(str(tmp_path / "none")).check()
    with pytest.raises(ConfigurationError, match="give one or the other"):
        DeltaSource(str(tmp_path / "t"), version=1, discovery_interval=1000)
