"""Data files of table formats: rows split by partition values, and Delta's column statistics."""

from __future__ import annotations

import math

import pyarrow as pa

from barrierflow.connectors.tables.table_files import column_stats, split_by_partition

ROWS = pa.table(
    {
        "k": ["a", None, "a", "b"],
        "n": [3, 1, None, 2],
        "x": [0.5, math.nan, 1.5, 2.5],
        "tags": [["t"], [], None, ["u"]],
    }
)


def test_rows_split_by_partition_values_nulls_included_columns_kept_or_dropped():
    parts = {p.values["k"]: p for p in split_by_partition(ROWS, ["k"], keep_columns=False)}
    assert set(parts) == {"a", "b", None}
    assert parts["a"].rows.column("n").to_pylist() == [3, None]
    assert "k" not in parts[None].rows.column_names
    kept = split_by_partition(ROWS, ["k"], keep_columns=True)
    assert all("k" in p.rows.column_names for p in kept)
    (whole,) = split_by_partition(ROWS, [], keep_columns=False)
    assert whole.rows is ROWS and whole.values == {}


def test_stats_count_rows_and_nulls_and_bound_plain_columns_only():
    stats = column_stats(ROWS)
    assert stats["numRecords"] == 4
    assert stats["nullCount"] == {"k": 1, "n": 1, "x": 0}  # nested columns left out
    assert stats["minValues"] == {"k": "a", "n": 1}  # a NaN bound is no bound: x left out
    assert stats["maxValues"] == {"k": "b", "n": 3}
