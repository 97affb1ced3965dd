"""Parquet part files under killed processes: what Spark reads from the output directory must
be exactly what a failure-free run writes, record by record."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.formats.parquet import ParquetWriterFactory
from tests.jobs import odd_even
from tests.jobs.kill_before_commit import KillBeforeCommit

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("total", pa.int64())])


def _run(spark, tmp_path, name: str, fault: str | None, at_value: int = 0) -> list[tuple]:
    base = tmp_path / name
    out = str(base / "out")
    sink = FileSink.for_bulk_format(out, ParquetWriterFactory(SCHEMA)).build()
    throttle_fault = None
    if fault == "kill-before-commit":
        sink = KillBeforeCommit(sink, str(base / "fired"), after_commits=1)
    elif fault == "kill":
        throttle_fault = odd_even.Fault("kill", at_value, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, out, str(base / "ckpt"), interval_ms=100, delay_s=0.0003,
        fault=throttle_fault, source_parallelism=1, sink=sink,
    )  # fmt: skip
    result = env.execute(f"parquet-{name}")
    if fault is not None:
        assert os.path.exists(base / "fired"), "the fault never fired"
        assert result.attempts == 2
    rows = spark.read.parquet(out).collect()
    return sorted((r.k, r.v, r.total) for r in rows)


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory) -> list[tuple]:
    rows = _run(spark, tmp_path_factory.mktemp("parquet"), "golden", None)
    assert len(rows) == N
    odd_even.check_exactly_once([list(r) for r in rows], N)
    return rows


@pytest.mark.parametrize(
    ("fault", "at_value"),
    [("kill", 3000), ("kill-before-commit", 0)],
    ids=["kill-mid-stream", "kill-between-completion-and-commit"],
)
def test_spark_reads_exactly_the_failure_free_output_after_a_kill(
    spark, tmp_path, golden, fault, at_value
):
    assert _run(spark, tmp_path, fault, fault, at_value) == golden
