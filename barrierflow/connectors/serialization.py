"""Serialization schemas of connectors: how a record becomes the bytes of a message, and back
(PyFlink's names). Performs no I/O.

A message a deserializer cannot read raises ``ValueError``; the source that called it names
the message (topic, partition, offset) in the error it raises.
"""

from __future__ import annotations

from typing import Any

import msgspec


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


class JsonRowSerializationSchema:
    """A record (dict, list, number, string...) as one JSON document."""

    _encoder = msgspec.json.Encoder()

    @staticmethod
    def builder() -> _JsonBuilder:
        return _JsonBuilder(JsonRowSerializationSchema)

    def serialize(self, value: Any) -> bytes:
        return self._encoder.encode(value)

    def __repr__(self) -> str:
        return "JsonRowSerializationSchema()"


class JsonRowDeserializationSchema:
    """A message that is one JSON document; records are dicts, lists and plain values."""

    _decoder = msgspec.json.Decoder()

    @staticmethod
    def builder() -> _JsonBuilder:
        return _JsonBuilder(JsonRowDeserializationSchema)

    def deserialize(self, message: bytes) -> Any:
        try:
            return self._decoder.decode(message)
        except msgspec.DecodeError as e:
            raise ValueError(f"not JSON: {e}") from None

    def __repr__(self) -> str:
        return "JsonRowDeserializationSchema()"


class _JsonBuilder:
    def __init__(self, cls: type) -> None:
        self._cls = cls

    def build(self) -> Any:
        return self._cls()
