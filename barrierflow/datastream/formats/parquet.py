"""PyFlink's ``pyflink.datastream.formats.parquet`` (row types are ``Types.ROW_NAMED(...)``,
where PyFlink takes the Table API's ``RowType``), and barrierflow's own
``ParquetWriterFactory``: ``FileSink``'s bulk format in an Arrow schema, for records as dicts
by field name, or rows and tuples in the schema's order, beside PyFlink's Parquet writers."""

from barrierflow.connectors.files.parquet import ParquetWriterFactory
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
    "ParquetWriterFactory",
]
