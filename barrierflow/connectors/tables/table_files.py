"""Data files of table formats (Delta, Iceberg): a staged batch of rows split by partition
values, each part written as one Parquet file, and the column statistics a table log keeps.

**I/O:** writes files through the pyarrow file system it is given. **Threading:** the
calling subtask's task thread.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from barrierflow.checkpoint.file_systems import is_object_store


@dataclass(frozen=True)
class Part:
    """The rows of one partition: ``values`` by partition column (None: null), ``rows``
    without the partition columns when the format keeps them in the path."""

    values: dict[str, Any]
    rows: pa.Table


def split_by_partition(table: pa.Table, columns: list[str], keep_columns: bool) -> list[Part]:
    """One part per distinct combination of the values of ``columns`` (all rows if none)."""
    if not columns:
        return [Part({}, table)]
    keys = table.select(columns).group_by(columns).aggregate([]).to_pylist()
    parts = []
    for key in keys:
        mask = None
        for name, value in key.items():
            m = pc.is_null(table[name]) if value is None else pc.equal(table[name], value)
            mask = m if mask is None else pc.and_(mask, m)
        rows = table.filter(mask)
        parts.append(Part(key, rows if keep_columns else rows.drop_columns(columns)))
    return parts


def file_name(subtask: int, checkpoint_id: int) -> str:
    """Unique across subtasks, attempts and jobs: a replayed checkpoint writes new files, and
    files no commit names are never read (the table's log does not list them)."""
    return f"part-{subtask:05d}-{checkpoint_id}-{uuid.uuid4().hex}.parquet"


def write_parquet(fs: pafs.FileSystem, path: str, rows: pa.Table) -> int:
    """Writes ``rows`` as one whole Parquet file at ``path``; returns its size in bytes."""
    if not is_object_store(fs):  # an object store's directories are prefixes: none to make
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fs.open_output_stream(path) as out:
        pq.write_table(rows, out, compression="snappy")
        return out.tell()


def column_stats(rows: pa.Table) -> dict[str, Any]:
    """Delta's per-file statistics: the row count, and nulls, minima and maxima of the plain
    columns (readers skip files with them; a column left out is read)."""
    nulls: dict[str, int] = {}
    minima: dict[str, Any] = {}
    maxima: dict[str, Any] = {}
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        if pa.types.is_nested(column.type):
            continue
        nulls[name] = column.null_count
        if _ranged(column) and column.null_count < len(column):
            lo, hi = pc.min_max(column).values()
            minima[name], maxima[name] = _json(lo.as_py()), _json(hi.as_py())
    return {
        "numRecords": rows.num_rows,
        "nullCount": nulls,
        "minValues": minima,
        "maxValues": maxima,
    }


def _ranged(column: pa.ChunkedArray) -> bool:
    """Whether the column's minimum and maximum bound its values: a NaN is outside any bound
    (pyarrow's min and max skip it; a reader skipping files by them would lose it)."""
    t = column.type
    if pa.types.is_floating(t):
        return not pc.any(pc.is_nan(column)).as_py()
    return (
        pa.types.is_integer(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_date(t)
    )


def _json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime.date) else value
