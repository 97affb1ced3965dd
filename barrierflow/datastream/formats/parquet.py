"""PyFlink's ``pyflink.datastream.formats.parquet`` (row types are ``Types.ROW_NAMED(...)``,
where PyFlink takes the Table API's ``RowType``)."""

from barrierflow.connectors.formats.parquet_file import (
    AvroParquetReaders,
    AvroParquetWriters,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)

__all__ = [
    "AvroParquetReaders",
    "AvroParquetWriters",
    "ParquetBulkWriters",
    "ParquetColumnarRowInputFormat",
]
