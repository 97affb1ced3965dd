"""Delta, Iceberg and Spark Parquet tables under a SIGKILLed task: what a reader of the table
sees after the job (deltalake, pyiceberg, ``spark.table``) must be exactly what a failure-free
run commits, record by record. The failover replays the commit of the checkpoint it restores,
which the table already holds: it is skipped."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import pyarrow as pa
import pytest

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.delta import DeltaSink
from barrierflow.datastream.connectors.iceberg import IcebergSink
from barrierflow.datastream.connectors.spark_table import SparkTableSink
from tests.jobs import odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("total", pa.int64())])


def _delta(base) -> tuple[DeltaSink, Callable[[], list[tuple]]]:
    from deltalake import DeltaTable

    path = str(base / "table")
    return DeltaSink(path, SCHEMA), lambda: _sorted(DeltaTable(path).to_pyarrow_table())


def _iceberg(base) -> tuple[IcebergSink, Callable[[], list[tuple]]]:
    from pyiceberg.catalog import load_catalog

    properties = {
        "type": "sql",
        "uri": f"sqlite:///{base}/catalog.db",
        "warehouse": f"file://{base}/warehouse",
    }
    catalog = load_catalog("local", **properties)
    catalog.create_namespace("db")
    catalog.create_table("db.out", SCHEMA)
    sink = IcebergSink("local", "db.out", properties)
    return sink, lambda: _sorted(catalog.load_table("db.out").scan().to_arrow())


def _spark_table(base) -> tuple[SparkTableSink, Callable[[], list[tuple]]]:
    """A Parquet table of the session's catalog, read back with Spark after the job."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()  # the test session's
    name = f"bf_{uuid.uuid4().hex[:12]}"
    spark.sql(
        f"CREATE TABLE {name} (k BIGINT, v BIGINT, total BIGINT) USING parquet "
        f"LOCATION '{base / 'table'}'"
    )

    def read() -> list[tuple]:
        return sorted(tuple(r) for r in spark.table(name).collect())

    return SparkTableSink(name), read


def _sorted(table: pa.Table) -> list[tuple]:
    return sorted((r["k"], r["v"], r["total"]) for r in table.to_pylist())


TABLES = {"delta": _delta, "iceberg": _iceberg, "spark-table": _spark_table}


def _run(base, table: str, fault_at: int | None) -> list[tuple]:
    os.makedirs(base, exist_ok=True)
    sink, read = TABLES[table](base)
    fault = None
    if fault_at is not None:
        fault = odd_even.Fault("kill", fault_at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, str(base / "unused"), str(base / "ckpt"), interval_ms=100, delay_s=0.0003,
        fault=fault, source_parallelism=1, sink=sink,
    )  # fmt: skip
    result = env.execute(f"{table}-{'killed' if fault else 'golden'}")
    if fault is not None:
        assert os.path.exists(base / "fired"), "the fault never fired"
        assert result.attempts == 2
    return read()


@pytest.mark.parametrize("table", sorted(TABLES))
def test_a_table_holds_exactly_the_failure_free_rows_after_a_task_is_killed(spark, tmp_path, table):
    golden = _run(tmp_path / "golden", table, None)
    assert len(golden) == N
    odd_even.check_exactly_once([list(r) for r in golden], N)
    assert _run(tmp_path / "killed", table, 3000) == golden
