"""DeltaSink on S3 (a real S3-protocol server, tests/servers/s3.py) with the job's ``s3.*``
settings, as checkpoints use them: partitioned files staged by pyarrow, the transaction
committed by delta-rs, a replayed checkpoint skipped, and the table read back."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.connectors.delta.delta_paths import storage_options
from barrierflow.datastream.connectors.delta import DeltaSink, DeltaSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

SCHEMA = pa.schema([("k", pa.string()), ("n", pa.int64())])


@pytest.fixture
def uri(s3):
    file_systems.initialize(file_systems.settings_from(Configuration(s3.configuration())))
    yield f"s3://{s3.bucket()}/tables/t"
    file_systems.initialize(file_systems.FileSystemSettings())


def test_a_partitioned_table_on_s3_commits_once_per_checkpoint_and_reads_back(uri):
    spec = operator(TransformationKind.SINK, DeltaSink(uri, SCHEMA, ["k"]), uid="sink")
    h = OperatorHarness(spec)
    h.process([("a", 1), ("b", 2)])
    state = h.snapshot(1)
    h.notify_complete(1)
    h.close()
    h.restored(state).close()  # a failover after the commit: checkpoint 1 again, skipped

    options = storage_options(uri, file_systems.current_settings().s3, None)
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 0
    assert sorted(tuple(r.values()) for r in table.to_pyarrow_table().to_pylist()) == [
        ("a", 1), ("b", 2),
    ]  # fmt: skip

    source = operator(TransformationKind.SOURCE, DeltaSource(uri), uid="source")
    reader = OperatorHarness(source)
    read = []
    while (batch := reader.poll(10)) is not None:
        read += [tuple(r) for r in batch]
    assert sorted(read) == [("a", 1), ("b", 2)]
