"""PyFlink's ``pyflink.common.serialization``."""

from barrierflow.connectors.file_format import Encoder
from barrierflow.connectors.serialization import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
    SimpleStringSchema,
)

__all__ = [
    "Encoder",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
    "SimpleStringSchema",
]
