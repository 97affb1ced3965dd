"""Rows per second into a Delta table and an Iceberg table, against the Parquet FileSink and
against pyarrow writing the same Parquet files alone, in one run; and the commit latency per
checkpoint (the global committer's table commit, on the JobMaster's thread).

Each sink runs in its operator, in-process (``OperatorHarness``, no Spark): ``--checkpoints``
checkpoints of ``--rows`` records ``(i, "key-<i % 1000>", i * 0.5)`` each, written in batches
of 1,000, then ``prepare_commit`` at the barrier and the commit when it completes. pyarrow alone
converts the same tuples to Arrow, batch by batch, and writes one file per checkpoint. Rows are
counted back from each table and checked; medians of ``--rounds`` rounds, interleaved, after a
warm-up round.

    python bench/table_sinks.py --rows 200000 --checkpoints 10 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.datastream.connectors.delta import DeltaSink
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.iceberg import IcebergSink
from barrierflow.datastream.formats.parquet import ParquetWriterFactory
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

SCHEMA = pa.schema([("i", pa.int64()), ("key", pa.string()), ("value", pa.float64())])
BATCH = 1000


def batches(rows: int, checkpoint: int) -> list[list[tuple]]:
    base = checkpoint * rows
    records = [(i, f"key-{i % 1000}", i * 0.5) for i in range(base, base + rows)]
    return [records[j : j + BATCH] for j in range(0, rows, BATCH)]


def run_sink(sink: Any, rows: int, checkpoints: int) -> tuple[float, list[float]]:
    """Seconds in all, and each checkpoint's commit in seconds."""
    h = OperatorHarness(operator(TransformationKind.SINK, sink, uid="sink"))
    inputs = [batches(rows, c) for c in range(checkpoints)]
    commits = []
    start = time.perf_counter()
    for c, data in enumerate(inputs, start=1):
        for batch in data:
            h.process(batch)
        h.snapshot(c)
        before = time.perf_counter()
        h.notify_complete(c)
        commits.append(time.perf_counter() - before)
    total = time.perf_counter() - start
    h.close()
    return total, commits


def run_pyarrow(directory: str, rows: int, checkpoints: int) -> tuple[float, list[float]]:
    inputs = [batches(rows, c) for c in range(checkpoints)]
    start = time.perf_counter()
    for c, data in enumerate(inputs):
        converted = []
        for batch in data:  # as the records arrive, in the same batches as the sinks get them
            columns = list(zip(*batch, strict=True))
            arrays = [pa.array(col, type=f.type) for col, f in zip(columns, SCHEMA, strict=True)]
            converted.append(pa.RecordBatch.from_arrays(arrays, schema=SCHEMA))
        table = pa.Table.from_batches(converted, SCHEMA)
        pq.write_table(table, f"{directory}/part-{c}.parquet", compression="snappy")
    return time.perf_counter() - start, []


def delta(directory: str) -> tuple[Any, Callable[[], int]]:
    from deltalake import DeltaTable

    path = f"{directory}/delta"
    return DeltaSink(path, SCHEMA), lambda: DeltaTable(path).to_pyarrow_table().num_rows


def iceberg(directory: str) -> tuple[Any, Callable[[], int]]:
    from pyiceberg.catalog import load_catalog

    properties = {
        "type": "sql",
        "uri": f"sqlite:///{directory}/catalog.db",
        "warehouse": f"file://{directory}/warehouse",
    }
    catalog = load_catalog("bench", **properties)
    catalog.create_namespace("db")
    catalog.create_table("db.t", SCHEMA)
    sink = IcebergSink("bench", "db.t", properties)
    return sink, lambda: catalog.load_table("db.t").scan().to_arrow().num_rows


def parquet_sink(directory: str) -> tuple[Any, Callable[[], int]]:
    out = f"{directory}/parquet"
    sink = FileSink.for_bulk_format(out, ParquetWriterFactory(SCHEMA)).build()
    return sink, lambda: pq.read_table(out).num_rows


SINKS = {"parquet FileSink": parquet_sink, "DeltaSink": delta, "IcebergSink": iceberg}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000, help="records per checkpoint")
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    expected = args.rows * args.checkpoints
    seconds: dict[str, list[float]] = {}
    commits: dict[str, list[float]] = {}
    for round_number in range(args.rounds + 1):  # round 0 warms up (imports, codecs)
        with tempfile.TemporaryDirectory(prefix="bench-tables-") as d:
            total, _ = run_pyarrow(d, args.rows, args.checkpoints)
            if round_number:
                seconds.setdefault("pyarrow alone", []).append(total)
        for name, make in SINKS.items():
            with tempfile.TemporaryDirectory(prefix="bench-tables-") as d:
                sink, count = make(d)
                total, per_commit = run_sink(sink, args.rows, args.checkpoints)
                if count() != expected:
                    raise SystemExit(f"{name}: {count()} rows, not {expected}")
                if round_number:
                    seconds.setdefault(name, []).append(total)
                    commits.setdefault(name, []).extend(per_commit)
    base = statistics.median(seconds["pyarrow alone"])
    for name, times in seconds.items():
        median = statistics.median(times)
        figures: dict[str, Any] = {
            "sink": name,
            "rows_per_s": round(expected / median),
            "rate_vs_pyarrow_alone": round(base / median, 2),
        }
        if commits.get(name):
            c = sorted(commits[name])
            figures["commit_ms_median"] = round(statistics.median(c) * 1000, 1)
            figures["commit_ms_max"] = round(c[-1] * 1000, 1)
        print(json.dumps({"bench": "table_sinks", **figures}), flush=True)


if __name__ == "__main__":
    main()
