"""PyFlink's ``pyflink.datastream.formats.csv`` (column types are type information,
``Types.INT()``, where PyFlink takes the Table API's ``DataTypes``)."""

from barrierflow.connectors.formats.csv_file import CsvBulkWriters, CsvReaderFormat
from barrierflow.connectors.formats.csv_row import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from barrierflow.connectors.formats.csv_schema import CsvSchema, CsvSchemaBuilder

__all__ = [
    "CsvBulkWriters",
    "CsvReaderFormat",
    "CsvRowDeserializationSchema",
    "CsvRowSerializationSchema",
    "CsvSchema",
    "CsvSchemaBuilder",
]
