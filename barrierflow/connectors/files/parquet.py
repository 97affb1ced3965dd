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

from barrierflow.connectors.files.file_format import PartWriter, RecordEncodingError
from barrierflow.errors import ConfigurationError
from barrierflow.row import Row

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError)


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
        try:
            batch = self._to_batch(records)
        except _ARROW_ERRORS:
            first_is_dict = isinstance(records[0], dict)
            for record in records:  # which one: convert them one by one
                try:
                    if isinstance(record, dict) != first_is_dict:
                        raise TypeError("a batch mixes dicts and tuples")
                    self._to_batch([record])
                except _ARROW_ERRORS as e:
                    raise RecordEncodingError(
                        f"cannot write record {record!r:.200} as Parquet with schema "
                        f"{_describe(self._schema)}: {e}"
                    ) from e
            raise
        self._batches.append(batch)
        self._rows += batch.num_rows
        if self._rows >= self._factory.row_group_size:
            self._write_row_group()

    def _to_batch(self, records: list[Any]) -> pa.RecordBatch:
        names = set(self._schema.names)
        if records and isinstance(records[0], dict):
            for record in records:  # pyarrow would make missing or misspelled fields nulls
                if not isinstance(record, dict) or record.keys() != names:
                    raise TypeError(f"expected a dict of exactly the fields {sorted(names)}")
            return pa.RecordBatch.from_pylist(records, schema=self._schema)
        width = len(self._schema)
        for record in records:
            if not isinstance(record, tuple | list | Row) or len(record) != width:
                raise TypeError(f"expected a dict, or a Row or tuple of {width} fields")
        columns = list(zip(*records, strict=True)) if records else [()] * width
        arrays = [
            pa.array(column, type=field.type)
            for column, field in zip(columns, self._schema, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)

    def _write_row_group(self) -> None:
        if self._batches:
            table = pa.Table.from_batches(self._batches, self._schema)
            self._writer.write_table(table, row_group_size=self._factory.row_group_size)
            self._batches = []
            self._rows = 0

    def finish(self) -> None:
        self._write_row_group()
        self._writer.close()  # writes the footer; the file object stays open


def _describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"
