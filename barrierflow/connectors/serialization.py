"""``SimpleStringSchema``: a record that is a ``str`` as the bytes of a message, and back
(public at PyFlink's path, ``barrierflow.common``). Performs no I/O.

A message a deserializer cannot read raises ``ValueError``; the source that called it names
the message (topic, partition, offset) in the error it raises.
"""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

# The JSON row schemas are ``formats/json_row.py``'s; their paths here are deprecated.
_MOVED = MovedNames(
    __name__,
    {
        n: f"barrierflow.datastream.formats.json.{n}"
        for n in ("JsonRowDeserializationSchema", "JsonRowSerializationSchema")
    },
)

__all__ = ["SimpleStringSchema"]


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)


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
