"""The reader of the table sources (Delta, Iceberg): a split is one Parquet data file, read one
at a time, asking the enumerator for the next when it has none left; its position is the number
of rows already emitted, so a restored reader resumes at the first row after the checkpoint.
Records are ``Row``s named by the table's columns; partition columns that a file does not hold
(Delta's) come from the split's ``partition`` values, as text, typed by the table's schema.

**Threading:** the task thread. **I/O:** reads the files through the job's file systems.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.checkpoint.file_systems import resolve
from barrierflow.common.types import Row
from barrierflow.connectors.base.sequential_split_reader import (
    UNREAD_FILES,
    SequentialSplitReader,
)
from barrierflow.connectors.interfaces.source_reader import SourceReaderContext
from barrierflow.connectors.tables.table_file_split import TableFileSplit

_BATCH_ROWS = 8192


class ParquetSplitReader(SequentialSplitReader[TableFileSplit]):
    backlog_label = UNREAD_FILES

    def __init__(self, schema: pa.Schema, context: SourceReaderContext) -> None:
        super().__init__(context.send_split_request)
        self._schema = schema
        self._names = list(schema.names)
        self._rows: Iterator[tuple] | None = None
        self._file: Any = None  # of the split being read

    def _open_split(self, split: TableFileSplit) -> None:
        self._rows = self._open(split)

    def _read_split(
        self, split: TableFileSplit, max_records: int
    ) -> tuple[list[Any], TableFileSplit, bool]:
        out: list[Any] = []
        at_end = True
        assert self._rows is not None  # opened by _open_split
        for values in self._rows:
            row = Row(*values)
            row.set_field_names(self._names)
            out.append(row)
            if len(out) >= max_records:
                at_end = False
                break
        return out, msgspec.structs.replace(split, offset=split.offset + len(out)), at_end

    def _open(self, split: TableFileSplit) -> Iterator[tuple]:
        """The rows of the split's file from its offset on, as tuples in the schema's order."""
        fs, path = resolve(split.path)
        self._file = fs.open_input_file(path)
        file = pq.ParquetFile(self._file)
        partition = split.partition
        in_file = [n for n in self._names if n not in partition]
        constants = {
            name: pa.scalar(value).cast(self._schema.field(name).type).as_py()
            if value is not None
            else None
            for name, value in partition.items()
        }
        skip = split.offset
        for batch in file.iter_batches(batch_size=_BATCH_ROWS, columns=in_file):
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            columns = batch.slice(skip).to_pydict()
            skip = 0
            count = len(next(iter(columns.values()))) if columns else 0
            for i in range(count):
                yield tuple(constants[n] if n in constants else columns[n][i] for n in self._names)

    def _close_split(self) -> None:
        self._rows = None
        if self._file is not None:  # None when opening the file failed
            self._file.close()
            self._file = None
