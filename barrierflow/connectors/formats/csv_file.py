"""CSV files: ``CsvReaderFormat`` reads them for FileSource (a Row per record, named and typed
by the ``CsvSchema``) and ``CsvBulkWriters`` writes part files for FileSink.

A split's position is the byte offset after the last record read, so a record whose quoted
field spans lines is read whole, and a restored reader starts at the next record. The header
(``set_use_header``) and the first data row (``set_skip_first_data_row``) are skipped at the
start of a file only; with ``set_strict_headers`` a header that does not name the schema's
columns, in order, fails the read naming the file.

**Threading:** the task thread. **I/O:** reads and writes the files it is given.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any, BinaryIO

import pyarrow.fs as pafs

from barrierflow.connectors.files.file_format import PartWriter, RecordEncodingError
from barrierflow.connectors.files.file_reader import LineFile, SplitRecords
from barrierflow.connectors.files.file_source import StreamFormat
from barrierflow.connectors.formats.csv_fields import read_field, write_field
from barrierflow.connectors.formats.csv_schema import CsvSchema
from barrierflow.connectors.formats.row_fields import make_row, row_values
from barrierflow.errors import ConfigurationError


def _checked(schema: Any, what: str) -> CsvSchema:
    if not isinstance(schema, CsvSchema):
        raise ConfigurationError(f"{what} needs a CsvSchema (CsvSchema.builder()...build())")
    if not schema.columns:
        raise ConfigurationError(f"{what}: the CsvSchema has no columns")
    return schema


class CsvReaderFormat(StreamFormat):
    def __init__(self, schema: CsvSchema) -> None:
        super().__init__("UTF-8")
        self.schema = _checked(schema, "CsvReaderFormat")
        self.schema.codecs()

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        return CsvReaderFormat(schema)

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        return _CsvRecords(self.schema, LineFile(fs, path, position))

    def __repr__(self) -> str:
        return f"CsvReaderFormat({self.schema})"


class _CsvRecords:
    def __init__(self, schema: CsvSchema, lines: LineFile) -> None:
        self._schema = schema
        self._codecs = schema.codecs()
        self._names = [c.name for c in schema.columns]
        self._lines = lines
        self.position = lines.position  # after the last record returned
        dialect = {k: v for k, v in schema.dialect().items() if k != "lineterminator"}
        self._reader = csv.reader(self._texts(), strict=True, **dialect)
        self._to_skip = 0
        if lines.position == 0:
            self._to_skip = int(schema.use_header) + int(schema.skip_first_data_row)

    def _texts(self) -> Iterator[str]:
        while (line := self._lines.next_line()) is not None:
            text = line.decode("utf-8")
            if self._schema.allow_comments and text.startswith("#"):
                continue
            yield text

    def read(self, max_records: int) -> list[Any]:
        out: list[Any] = []
        while len(out) < max_records:
            try:
                fields = next(self._reader)
            except StopIteration:
                break
            except csv.Error as e:
                raise ValueError(f"not CSV at byte {self.position}: {e}") from None
            record_at = self.position
            self.position = self._lines.position
            if self._to_skip:
                if self._to_skip == 1 + int(self._schema.skip_first_data_row):
                    self._check_header(fields)
                self._to_skip -= 1
                continue
            if not fields:
                continue  # a blank line
            out.append(self._row(fields, record_at))
        return out

    def _check_header(self, fields: list[str]) -> None:
        if self._schema.use_header and self._schema.strict_headers and fields != self._names:
            raise ValueError(
                f"the header {fields} does not name the schema's columns {self._names}"
            )

    def _row(self, fields: list[str], record_at: int) -> Any:
        if len(fields) != len(self._codecs):
            raise ValueError(
                f"the record at byte {record_at} has {len(fields)} fields, the schema has "
                f"{len(self._codecs)}: {fields!r:.200}"
            )
        try:
            values = [
                read_field(c, f, self._schema.null_value)
                for c, f in zip(self._codecs, fields, strict=True)
            ]
        except ValueError as e:
            raise ValueError(f"the record at byte {record_at}: {e}") from None
        return make_row(values, self._names)

    def close(self) -> None:
        self._lines.close()


class CsvBulkWriters:
    """FileSink's CSV part files: ``FileSink.for_bulk_format(dir, CsvBulkWriters.for_schema(
    schema))``; records are Rows, tuples or dicts of the schema's columns."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvWriterFactory:
        return CsvWriterFactory(schema)


class CsvWriterFactory:
    suffix = ".csv"

    def __init__(self, schema: CsvSchema) -> None:
        self.schema = _checked(schema, "CsvBulkWriters.for_schema()")
        self.schema.codecs()

    def open_part(self, file: BinaryIO) -> PartWriter:
        return _CsvPart(self.schema, file)

    def __repr__(self) -> str:
        return f"CsvBulkWriters.for_schema({self.schema})"


class _CsvPart:
    def __init__(self, schema: CsvSchema, file: BinaryIO) -> None:
        self._schema = schema
        self._codecs = schema.codecs()
        self._null = "" if schema.null_value is None else schema.null_value
        self._line = schema.line_format()
        self._file = file
        if schema.use_header:
            header = self._line.line([(c.name, True) for c in schema.columns], self._null)
            file.write(header.encode("utf-8"))

    def add(self, records: list[Any]) -> None:
        row_type = self._schema.row_type
        lines = []
        for record in records:
            try:
                values = row_values(record, row_type)
                fields = [
                    (write_field(c, v), c.is_text)
                    for c, v in zip(self._codecs, values, strict=True)
                ]
            except (TypeError, ValueError) as e:
                raise RecordEncodingError(
                    f"cannot write record {record!r:.200} as CSV of {self._schema}: {e}"
                ) from e
            lines.append(self._line.line(fields, self._null))
        self._file.write("".join(lines).encode("utf-8"))

    def finish(self) -> None:
        pass
