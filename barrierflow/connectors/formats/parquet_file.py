"""Parquet files, PyFlink's names on pyarrow: ``ParquetColumnarRowInputFormat`` (a bulk format:
Rows of the row type's columns) and ``AvroParquetReaders.for_generic_record`` (a stream format:
dicts by field name) read them for FileSource; ``ParquetBulkWriters.for_row_type`` and
``AvroParquetWriters.for_generic_record`` write FileSink's part files through the Parquet
bulk format FileSink has (``connectors/files/parquet.py``).

PyFlink types columns with the Table API's ``RowType``; here the row type is
``Types.ROW_NAMED([...], [...])`` (or a pyarrow Schema). A split's position is the number of
rows read: a restored reader skips whole row groups by their row counts. Hadoop
configurations have no place here (files are read through pyarrow's file systems, configured
with the job's ``s3.*`` settings): a non-empty one is refused.

**Threading:** the task thread. **I/O:** reads the files it is given.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from barrierflow.connectors.files.file_reader import SplitRecords
from barrierflow.connectors.files.file_source import BulkFormat, StreamFormat
from barrierflow.connectors.files.parquet import ParquetWriterFactory
from barrierflow.connectors.formats.arrow_types import (
    arrow_schema_of_avro,
    arrow_schema_of_row_type,
)
from barrierflow.connectors.formats.avro_schema import AvroSchema, avro_schema
from barrierflow.connectors.formats.row_fields import make_row
from barrierflow.errors import ConfigurationError


def no_hadoop(hadoop_config: Any, what: str) -> None:
    if hadoop_config is None:
        return
    keys = hadoop_config.to_dict() if hasattr(hadoop_config, "to_dict") else hadoop_config
    if keys:
        raise ConfigurationError(
            f"{what}: a Hadoop configuration ({sorted(keys)}) configures Hadoop's file systems, "
            "which barrierflow does not use: files are read through pyarrow's, configured by "
            "the job's s3.* settings"
        )


class _ParquetRows:
    """The rows of one Parquet file from row ``position`` on, as ``convert`` makes them of
    each batch's dicts."""

    def __init__(
        self, file: Any, position: int, columns: list[str] | None, batch_size: int, convert: Any
    ) -> None:
        self._file = file
        self.position = position
        self._rows = self._from(pq.ParquetFile(file), position, columns, batch_size, convert)

    @staticmethod
    def _from(
        parquet: pq.ParquetFile, skip: int, columns: list[str] | None, batch_size: int, convert: Any
    ) -> Iterator[Any]:
        groups: list[int] = []
        for index in range(parquet.num_row_groups):
            rows = parquet.metadata.row_group(index).num_rows
            if not groups and skip >= rows:
                skip -= rows  # skipped without reading it
            else:
                groups.append(index)
        if not groups:
            return
        for batch in parquet.iter_batches(batch_size, row_groups=groups, columns=columns):
            records = batch.to_pylist()
            if skip:
                records, skip = records[skip:], max(0, skip - len(records))
            yield from (convert(r) for r in records)

    def read(self, max_records: int) -> list[Any]:
        out: list[Any] = []
        try:
            for row in self._rows:
                out.append(row)
                if len(out) == max_records:
                    break
        except (pa.ArrowException, OSError) as e:
            raise ValueError(f"not a Parquet file (after row {self.position}): {e}") from e
        self.position += len(out)
        return out

    def close(self) -> None:
        self._file.close()


class ParquetColumnarRowInputFormat(BulkFormat):
    """Rows of the row type's columns, read in batches of ``batch_size``."""

    def __init__(
        self,
        row_type: Any,
        hadoop_config: Any = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ) -> None:
        no_hadoop(hadoop_config, "ParquetColumnarRowInputFormat")
        self.schema = arrow_schema_of_row_type(row_type, "ParquetColumnarRowInputFormat")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size = batch_size
        self.is_utc_timestamp = is_utc_timestamp
        self.is_case_sensitive = is_case_sensitive

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        file = fs.open_input_file(path)
        names = self.schema.names
        columns = self._columns(pq.ParquetFile(file).schema_arrow.names, path)
        file.seek(0)
        timestamp = _utc_naive if self.is_utc_timestamp else _local_naive

        def convert(record: dict[str, Any]) -> Any:
            return make_row([_plain(record[c], timestamp) for c in columns], names)

        return _ParquetRows(file, position, columns, self.batch_size, convert)

    def _columns(self, present: list[str], path: str) -> list[str]:
        """The file's column of each field of the row type (matched by name, ignoring case
        unless ``is_case_sensitive``)."""
        by_name = {(p if self.is_case_sensitive else p.lower()): p for p in present}
        columns = []
        for name in self.schema.names:
            column = by_name.get(name if self.is_case_sensitive else name.lower())
            if column is None:
                raise ValueError(f"{path} has no column {name!r}; its columns are {present}")
            columns.append(column)
        return columns

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.schema.names})"


def _utc_naive(value: datetime.datetime) -> datetime.datetime:
    return value.astimezone(datetime.UTC).replace(tzinfo=None)


def _local_naive(value: datetime.datetime) -> datetime.datetime:
    return value.astimezone().replace(tzinfo=None)


def _plain(value: Any, timestamp: Any) -> Any:
    """Timestamps stored adjusted to UTC become PyFlink's naive ones (in UTC or local time, as
    ``is_utc_timestamp`` says); others stay as pyarrow gives them."""
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return timestamp(value)
    return value


class AvroParquetRecordFormat(StreamFormat):
    """Parquet rows as Avro generic records: dicts of the schema's fields."""

    def __init__(self, schema: AvroSchema) -> None:
        super().__init__("UTF-8")
        self.schema = avro_schema(schema, "AvroParquetReaders.for_generic_record()")
        self._columns = self.schema.field_names

    def open_split(self, fs: pafs.FileSystem, path: str, position: int) -> SplitRecords:
        return _ParquetRows(fs.open_input_file(path), position, self._columns, 2048, _same)

    def __repr__(self) -> str:
        return f"AvroParquetReaders.for_generic_record({self.schema})"


def _same(record: Any) -> Any:
    return record


class AvroParquetReaders:
    @staticmethod
    def for_generic_record(schema: AvroSchema) -> AvroParquetRecordFormat:
        return AvroParquetRecordFormat(schema)


class AvroParquetWriters:
    @staticmethod
    def for_generic_record(schema: AvroSchema) -> ParquetWriterFactory:
        """Parquet part files of Avro generic records (dicts of the schema's fields)."""
        checked = avro_schema(schema, "AvroParquetWriters.for_generic_record()")
        checked.field_names  # noqa: B018 - a schema that is not a record fails here
        return ParquetWriterFactory(arrow_schema_of_avro(checked.parsed))


class ParquetBulkWriters:
    @staticmethod
    def for_row_type(
        row_type: Any, hadoop_config: Any = None, utc_timestamp: bool = False
    ) -> ParquetWriterFactory:
        """Parquet part files of Rows (or tuples, or dicts) of the row type."""
        no_hadoop(hadoop_config, "ParquetBulkWriters.for_row_type()")
        schema = arrow_schema_of_row_type(row_type, "ParquetBulkWriters.for_row_type()")
        if utc_timestamp:
            schema = pa.schema(
                [
                    f.with_type(pa.timestamp(f.type.unit, tz="UTC"))
                    if pa.types.is_timestamp(f.type) and f.type.tz is None
                    else f
                    for f in schema
                ]
            )
        return ParquetWriterFactory(schema)
