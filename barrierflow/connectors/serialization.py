"""Serialization schemas of connectors: how a record becomes the bytes of a message, and back
(PyFlink's names; the JSON row schemas are in ``formats/json_row.py``). Performs no I/O.

A message a deserializer cannot read raises ``ValueError``; the source that called it names
the message (topic, partition, offset) in the error it raises.
"""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.formats.json_row import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema", "SimpleStringSchema"]


class SimpleStringSchema:
    """A record is a ``str``; its bytes are its encoding (UTF-8 by default)."""

    def __init__(self, charset: str = "utf-8") -> None:
        "".encode(charset)  # an unknown charset fails here, at the job's definition
        self.charset = charset

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, str):
            raise TypeError(f"SimpleStringSchema serializes str, got {type(value).__name__}")
        return value.encode(self.charset)

    def deserialize(self, message: bytes) -> str:
        try:
            return message.decode(self.charset)
        except UnicodeDecodeError as e:
            raise ValueError(f"not {self.charset} text: {e}") from None

    def __repr__(self) -> str:
        return "SimpleStringSchema()"
