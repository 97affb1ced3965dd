"""PyFlink's ``pyflink.datastream.formats.json``."""

from barrierflow.connectors.formats.json_row import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]
