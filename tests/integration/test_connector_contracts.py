"""The contracts every source and every sink keeps, run over each of them through the operator
that hosts it (``OperatorHarness``), against real files, a real PostgreSQL server and a real
Kafka-protocol broker.

Sources: each record is read once by the subtasks together; a restore, at any parallelism,
resumes every split at its checkpointed position. Sinks: nothing is visible before its
checkpoint completes; commits are idempotent; after a failover, records are visible exactly
once; committables restore at another parallelism.
"""

from __future__ import annotations

import glob
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.common.types import Row
from barrierflow.connectors.tables.staged_files_source import StagedFilesSource
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.delta import DeltaSink, DeltaSource
from barrierflow.datastream.connectors.file_system import FileSink, FileSource
from barrierflow.datastream.connectors.iceberg import IcebergSink, IcebergSource
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.connectors.postgres import PostgresSink
from barrierflow.datastream.connectors.spark_table import SparkTableSink
from barrierflow.datastream.formats.json import JsonRowSerializationSchema
from barrierflow.datastream.formats.parquet import ParquetWriterFactory
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator
from tests.jobs.directory_catalog import DirectoryCatalog
from tests.jobs.sqlite_sink import SqliteSink, committed_records

N = 600
SQUARES = pa.schema([("i", pa.int64()), ("square", pa.int64())])


def sql_catalog(tmp_path, conninfo: str | None = None) -> tuple[Any, dict[str, str]]:
    """A pyiceberg SQL catalog on SQLite in ``tmp_path`` (or in the PostgreSQL database
    ``conninfo``), its warehouse in ``tmp_path``; and its properties."""
    from psycopg.conninfo import conninfo_to_dict
    from pyiceberg.catalog import load_catalog
    from sqlalchemy.engine import URL

    uri = f"sqlite:///{tmp_path}/catalog.db"
    if conninfo is not None:
        c = conninfo_to_dict(conninfo)
        url = URL.create(
            "postgresql+psycopg", c.get("user"), c.get("password"), c.get("host"),
            int(c["port"]) if c.get("port") else None, c.get("dbname"),
        )  # fmt: skip
        uri = url.render_as_string(hide_password=False)
    properties = {
        "type": "sql",
        "uri": uri,
        "warehouse": f"file://{tmp_path}/warehouse",
    }
    return load_catalog("local", **properties), properties


# --- sources -----------------------------------------------------------------------------------


def _table_rows(f: int) -> list[dict]:
    return [{"i": f * 1000 + i, "square": (f * 1000 + i) ** 2} for i in range(N // 4)]


def _named(rows: list[dict]) -> list[Row]:
    out = []
    for r in rows:
        row = Row(*r.values())
        row.set_field_names(list(r))
        out.append(row)
    return out


@pytest.fixture(params=["sequence", "file", "kafka", "delta", "iceberg", "staged"])
def source(request, tmp_path) -> tuple[Any, list[Any]]:
    """A bounded source holding N records, and those records."""
    if request.param == "sequence":
        return NumberSequenceSource(1, N), list(range(1, N + 1))
    if request.param == "file":
        for f in range(4):
            lines = [f"{f}-{i}" for i in range(N // 4)]
            (tmp_path / f"in-{f}.txt").write_text("\n".join(lines) + "\n")
        return FileSource(str(tmp_path)), [f"{f}-{i}" for f in range(4) for i in range(N // 4)]
    if request.param == "delta":  # four versions, a file each
        from deltalake import write_deltalake

        for f in range(4):
            write_deltalake(str(tmp_path / "t"), pa.Table.from_pylist(_table_rows(f), SQUARES),
                            mode="append")  # fmt: skip
        rows = [r for f in range(4) for r in _table_rows(f)]
        return DeltaSource(str(tmp_path / "t")), _named(rows)
    if request.param == "iceberg":  # four snapshots, a file each
        catalog, properties = sql_catalog(tmp_path)
        catalog.create_namespace("db")
        table = catalog.create_table("db.squares", SQUARES)
        for f in range(4):
            table.append(pa.Table.from_pylist(_table_rows(f), SQUARES))
        rows = [r for f in range(4) for r in _table_rows(f)]
        return IcebergSource("local", "db.squares", properties), _named(rows)
    if request.param == "staged":  # what env.from_spark(df) reads: a file per partition

        def stage() -> tuple[pa.Schema, list[str]]:
            paths = [str(tmp_path / f"part-{f}.parquet") for f in range(4)]
            for f, path in enumerate(paths):
                pq.write_table(pa.Table.from_pylist(_table_rows(f), SQUARES), path)
            return SQUARES, paths

        rows = [r for f in range(4) for r in _table_rows(f)]
        return StagedFilesSource(stage, "four files"), _named(rows)
    kafka = request.getfixturevalue("kafka")
    topic = kafka.create_topic(f"contract-{uuid.uuid4().hex[:8]}", 4)
    values = [str(i) for i in range(N)]
    kafka.produce(topic, [v.encode() for v in values], lambda i: i % 4)
    built = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_topics(topic)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    return built, values


def _drain(harness: OperatorHarness, limit: int | None = None) -> list[Any]:
    out: list[Any] = []
    while limit is None or len(out) < limit:
        batch = harness.poll(min(50, limit - len(out)) if limit else 50)
        if batch is None:
            break
        out += batch
    return out


def _sorted(values: list[Any]) -> list[str]:
    return sorted(map(str, values))


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_a_source_s_subtasks_read_every_record_once(source, parallelism):
    src, expected = source
    spec = operator(TransformationKind.SOURCE, src, uid="source")
    read = [v for h in OperatorHarness.subtasks(spec, parallelism) for v in _drain(h)]
    assert _sorted(read) == _sorted(expected)


@pytest.mark.parametrize("new_parallelism", [1, 2, 3])
def test_a_source_resumes_every_split_at_its_checkpointed_position(source, new_parallelism):
    src, expected = source
    spec = operator(TransformationKind.SOURCE, src, uid="source")
    old = OperatorHarness.subtasks(spec, 2)
    before = [v for h in old for v in _drain(h, 120)]
    states = [h.snapshot(1) for h in old]
    for h in old:
        _drain(h, 50)  # read after the checkpoint: replayed after the restore
        h.close()

    after = [v for h in OperatorHarness.rescaled(spec, states, new_parallelism) for v in _drain(h)]
    assert _sorted(before + after) == _sorted(expected)


# --- sinks -------------------------------------------------------------------------------------


@dataclass
class SinkUnderTest:
    sink: Any
    committed: Callable[[], list[tuple]]  # what a reader of the external system sees


SINKS = [
    "json-files", "parquet-files", "postgres", "kafka", "sqlite", "delta", "iceberg", "spark-table",
]  # fmt: skip


@pytest.fixture(params=[*SINKS, "iceberg-postgres"])
def sink(request, tmp_path) -> SinkUnderTest:
    """A sink of records ``(i, i * i)``."""
    kind = request.param
    if kind == "json-files":

        def json_rows() -> list[tuple]:
            rows = []
            for path in glob.glob(os.path.join(tmp_path, "part-*")):
                with open(path) as f:
                    rows += [tuple(json.loads(line)) for line in f]
            return sorted(rows)

        return SinkUnderTest(FileSink(str(tmp_path)), json_rows)
    if kind == "parquet-files":
        schema = SQUARES

        def parquet_rows() -> list[tuple]:
            files = glob.glob(os.path.join(tmp_path, "part-*"))
            return sorted(tuple(r.values()) for f in files for r in pq.read_table(f).to_pylist())

        sink = FileSink.for_bulk_format(str(tmp_path), ParquetWriterFactory(schema)).build()
        return SinkUnderTest(sink, parquet_rows)
    if kind == "postgres":
        conninfo = request.getfixturevalue("postgres").database(f"c_{uuid.uuid4().hex[:8]}")
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE TABLE squares (i int, square bigint)")

        def table_rows() -> list[tuple]:
            with psycopg.connect(conninfo) as conn:
                return sorted(conn.execute("SELECT i, square FROM squares").fetchall())

        sql = "INSERT INTO squares (i, square) VALUES (%s, %s)"
        return SinkUnderTest(PostgresSink(conninfo, sql, batch_size=25), table_rows)
    if kind == "delta":
        from deltalake import DeltaTable

        table = str(tmp_path / "delta")

        def delta_rows() -> list[tuple]:
            if not os.path.exists(os.path.join(table, "_delta_log")):
                return []
            return sorted(
                tuple(r.values()) for r in DeltaTable(table).to_pyarrow_table().to_pylist()
            )

        return SinkUnderTest(DeltaSink(table, schema=SQUARES), delta_rows)
    if kind.startswith("iceberg"):
        database = None
        if kind == "iceberg-postgres":  # the catalog's tables on the PostgreSQL server
            database = request.getfixturevalue("postgres").database(f"c_{uuid.uuid4().hex[:8]}")
        catalog, properties = sql_catalog(tmp_path, database)
        catalog.create_namespace("db")
        catalog.create_table("db.squares", SQUARES)

        def iceberg_rows() -> list[tuple]:
            rows = catalog.load_table("db.squares").scan().to_arrow().to_pylist()
            return sorted(tuple(r.values()) for r in rows)

        return SinkUnderTest(IcebergSink("local", "db.squares", properties), iceberg_rows)
    if kind == "spark-table":  # a local directory as the catalog's table: no Spark
        table = str(tmp_path / "spark-table")
        os.makedirs(table)

        def spark_table_rows() -> list[tuple]:  # the files Spark lists: none under "_"
            files = glob.glob(os.path.join(table, "*.parquet"))
            return sorted(tuple(r.values()) for f in files for r in pq.read_table(f).to_pylist())

        catalog = DirectoryCatalog.parquet("db.squares", table, SQUARES)
        return SinkUnderTest(SparkTableSink("db.squares", catalog), spark_table_rows)
    if kind == "sqlite":  # a sink written in the tests: only a writer and a committer
        path = str(tmp_path / "sink.db")
        return SinkUnderTest(
            SqliteSink(path), lambda: sorted(tuple(r) for r in committed_records(path))
        )
    kafka = request.getfixturevalue("kafka")
    topic = kafka.create_topic(f"contract-out-{uuid.uuid4().hex[:8]}", 2)
    built = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(JsonRowSerializationSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"contract-{topic}")
        .build()
    )
    return SinkUnderTest(
        built, lambda: sorted(tuple(json.loads(v)) for _, _, v in kafka.read_committed(topic))
    )


def _records(lo: int, hi: int) -> list[tuple]:
    return [(i, i * i) for i in range(lo, hi)]


def test_a_sink_shows_nothing_before_its_checkpoint_completes_and_commits_idempotently(sink):
    spec = operator(TransformationKind.SINK, sink.sink, uid="sink")
    h = OperatorHarness(spec)
    h.process(_records(0, 100))
    state = h.snapshot(1)
    assert sink.committed() == []
    h.notify_complete(1)
    assert sink.committed() == _records(0, 100)
    h.close()

    again = h.restored(state)  # a failover after the commit: the restored committables again
    again.close()
    assert sink.committed() == _records(0, 100)


def test_a_sink_after_a_failover_holds_each_record_once(sink):
    spec = operator(TransformationKind.SINK, sink.sink, uid="sink")
    h = OperatorHarness(spec)
    h.process(_records(0, 100))
    state = h.snapshot(1)  # checkpoint 1 completes, but the subtask dies before its commit
    h.process(_records(100, 200))  # after the checkpoint: replayed after the restore
    h.snapshot(2)  # never completes

    restored = h.restored(state)
    restored.process(_records(100, 200))
    restored.snapshot(3)
    restored.notify_complete(3)
    restored.close()
    assert sink.committed() == _records(0, 200)


@pytest.mark.parametrize("new_parallelism", [1, 3])
def test_a_sink_s_committables_restore_at_another_parallelism(sink, new_parallelism):
    spec = operator(TransformationKind.SINK, sink.sink, uid="sink")
    old = OperatorHarness.subtasks(spec, 2)
    for s, h in enumerate(old):
        h.process(_records(s * 100, s * 100 + 100))
    states = [h.snapshot(1) for h in old]  # completes; no subtask lives to commit it

    for h in OperatorHarness.rescaled(spec, states, new_parallelism):
        h.close()
    assert sink.committed() == _records(0, 200)
