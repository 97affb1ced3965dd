"""Avro object container files: ``AvroInputFormat`` reads them (each record an Avro generic
record: a dict by field name, as PyFlink hands GenericRecords to Python) and
``AvroBulkWriters.for_generic_record(schema)`` writes FileSink's part files, on fastavro.

A split's position is the number of records read; a restored reader skips whole blocks by
their record counts, then the records of the block it stopped in.

**Threading:** the task thread. **I/O:** reads and writes the files it is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import pyarrow.fs as pafs

from barrierflow.connectors.files.file_format import PartWriter, RecordEncodingError
from barrierflow.connectors.files.file_reader import SplitRecords
from barrierflow.connectors.files.file_source import FileSource, StreamFormat
from barrierflow.connectors.formats.avro_schema import (
    AvroSchema,
    GenericRecordAvroTypeInfo,
    avro_schema,
    fastavro,
    to_record,
)


class AvroRecordFormat(StreamFormat):
    """FileSource's format of Avro container files (what ``AvroInputFormat`` reads with)."""

    def __init__(self, schema: AvroSchema) -> None:
        super().__init__("UTF-8")
        self.schema = avro_schema(schema, "AvroInputFormat")
        fastavro()

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        return _AvroRecords(fs.open_input_file(path), position, self.schema)

    def __repr__(self) -> str:
        return f"AvroInputFormat({self.schema})"


class _AvroRecords:
    def __init__(self, file: Any, position: int, schema: AvroSchema) -> None:
        self._file = file
        self.position = position
        self._records = self._from(position, schema)

    def _from(self, position: int, schema: AvroSchema) -> Iterator[Any]:
        for block in fastavro().block_reader(self._file, schema.parsed):
            if position >= block.num_records:
                position -= block.num_records  # skipped without decoding its records
                continue
            for index, record in enumerate(block):
                if index >= position:
                    yield record
            position = 0

    def read(self, max_records: int) -> list[Any]:
        out = []
        try:
            for record in self._records:
                out.append(record)
                if len(out) == max_records:
                    break
        except Exception as e:  # a corrupt block fails in many ways
            raise ValueError(
                f"not an Avro container file of the schema after record {self.position}: "
                f"{type(e).__name__}: {e}"
            ) from e
        self.position += len(out)
        return out

    def close(self) -> None:
        self._file.close()


class AvroInputFormat:
    """PyFlink's ``env.create_input(AvroInputFormat(path, schema))``: the records of the Avro
    files at ``path`` (a file or a directory), as a bounded FileSource."""

    def __init__(self, path: str, schema: AvroSchema) -> None:
        self.path = path
        self.schema = avro_schema(schema, "AvroInputFormat")

    def get_produced_type(self) -> GenericRecordAvroTypeInfo:
        return GenericRecordAvroTypeInfo(self.schema)

    def as_source(self) -> FileSource:
        return FileSource(self.path, record_format=AvroRecordFormat(self.schema))

    def __repr__(self) -> str:
        return f"AvroInputFormat({self.path!r}, {self.schema})"


class AvroBulkWriters:
    @staticmethod
    def for_generic_record(schema: AvroSchema) -> AvroWriterFactory:
        return AvroWriterFactory(avro_schema(schema, "AvroBulkWriters.for_generic_record()"))


class AvroWriterFactory:
    """FileSink's Avro part files: a container file each, its blocks written as records come
    and its last block at the barrier that closes it. Records are dicts by field name, or
    Rows and tuples by position."""

    suffix = ".avro"

    def __init__(self, schema: AvroSchema, codec: str = "null") -> None:
        self.schema = schema
        self.codec = codec
        fastavro()

    def open_part(self, file: BinaryIO) -> PartWriter:
        return _AvroPart(self.schema, self.codec, file)

    def __repr__(self) -> str:
        return f"AvroBulkWriters.for_generic_record({self.schema})"


class _AvroPart:
    def __init__(self, schema: AvroSchema, codec: str, file: BinaryIO) -> None:
        self._fastavro = fastavro()
        self._schema = schema
        self._writer = self._fastavro.write.Writer(file, schema.parsed, codec=codec)

    def add(self, records: list[Any]) -> None:
        for record in records:
            datum = to_record(record, self._schema.parsed, {})
            try:
                self._fastavro.validation.validate(datum, self._schema.parsed, raise_errors=True)
            except Exception as e:  # fastavro's validation error names the field
                raise RecordEncodingError(
                    f"cannot write record {record!r:.200} as Avro of {self._schema}: {e}"
                ) from e
            self._writer.write(datum)

    def finish(self) -> None:
        self._writer.flush()
