"""PyFlink's ``pyflink.datastream.formats.csv``."""

from barrierflow.connectors.formats.csv_row import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)

__all__ = ["CsvRowDeserializationSchema", "CsvRowSerializationSchema"]
