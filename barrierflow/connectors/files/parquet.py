"""ParquetWriterFactory: FileSink's bulk format, through pyarrow.

Records are dicts keyed by field name, or Rows, tuples (or lists) in the schema's field order.
They are converted to Arrow as they arrive (so a record that does not fit the schema fails the
write that brought it, named) and written as row groups of ``row_group_size`` rows; the footer
is written at the barrier that closes the part file.

**Threading:** the subtask's task thread only.
"""

from __future__ import annotations

from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.connectors.files.file_format import PartWriter
from barrierflow.connectors.tables.arrow_records import to_record_batch
from barrierflow.errors import ConfigurationError


class ParquetWriterFactory:
    suffix = ".parquet"

    def __init__(
        self, schema: pa.Schema, compression: str = "snappy", row_group_size: int = 65536
    ) -> None:
        if not isinstance(schema, pa.Schema):
            raise ConfigurationError(
                f"ParquetWriterFactory needs a pyarrow.Schema, got {schema!r:.200}"
            )
        if not isinstance(row_group_size, int) or row_group_size < 1:
            raise ConfigurationError(
                f"ParquetWriterFactory row_group_size must be a positive integer, "
                f"got {row_group_size!r}"
            )
        self.schema = schema
        self.compression = compression
        self.row_group_size = row_group_size

    def open_part(self, file: BinaryIO) -> PartWriter:
        return ParquetPart(self, file)

    def __repr__(self) -> str:
        return f"ParquetWriterFactory({self.schema.names})"


class ParquetPart:
    def __init__(self, factory: ParquetWriterFactory, file: BinaryIO) -> None:
        self._factory = factory
        self._schema = factory.schema
        self._writer = pq.ParquetWriter(file, factory.schema, compression=factory.compression)
        self._batches: list[pa.RecordBatch] = []
        self._rows = 0

    def add(self, records: list[Any]) -> None:
        batch = to_record_batch(records, self._schema, "Parquet")
        self._batches.append(batch)
        self._rows += batch.num_rows
        if self._rows >= self._factory.row_group_size:
            self._write_row_group()

    def _write_row_group(self) -> None:
        if self._batches:
            table = pa.Table.from_batches(self._batches, self._schema)
            self._writer.write_table(table, row_group_size=self._factory.row_group_size)
            self._batches = []
            self._rows = 0

    def finish(self) -> None:
        self._write_row_group()
        self._writer.close()  # writes the footer; the file object stays open
