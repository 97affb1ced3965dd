"""PyFlink's ``pyflink.common.serialization``: how records become the bytes of a message and
back (Kafka's keys and values), and how a file sink writes a record.

``SerializationSchema`` and ``DeserializationSchema`` are the interfaces: any object with
``serialize(value) -> bytes`` (``deserialize(message) -> value``) is one, so the schemas of
barrierflow's connectors and a program's own are alike. Performs no I/O.
"""

from __future__ import annotations

import abc
from typing import Any

from barrierflow.connectors.files.file_format import Encoder
from barrierflow.connectors.serialization import SimpleStringSchema
from barrierflow.lazy_names import MovedNames

# PyFlink has the JSON row schemas in ``pyflink.datastream.formats.json`` only.
_MOVED = MovedNames(
    __name__,
    {
        n: f"barrierflow.datastream.formats.json.{n}"
        for n in ("JsonRowDeserializationSchema", "JsonRowSerializationSchema")
    },
)

__all__ = [
    "BulkWriterFactory",
    "ByteArraySchema",
    "DeserializationSchema",
    "Encoder",
    "RowFieldExtractorSchema",
    "SerializationSchema",
    "SimpleStringSchema",
]


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)


def _defines(cls: type, method: str) -> bool:
    return any(method in vars(base) for base in cls.__mro__)


class SerializationSchema(abc.ABC):
    """Turns a record into the bytes of a message. A record that cannot be turned into bytes
    raises ``TypeError`` or ``ValueError``; the sink names the record."""

    @abc.abstractmethod
    def serialize(self, value: Any) -> bytes: ...

    @classmethod
    def __subclasshook__(cls, candidate: type) -> bool:
        if cls is SerializationSchema:
            return _defines(candidate, "serialize")
        return NotImplemented


class DeserializationSchema(abc.ABC):
    """Turns the bytes of a message into a record. A message it cannot read raises
    ``ValueError``; the source names the message (topic, partition, offset)."""

    @abc.abstractmethod
    def deserialize(self, message: bytes) -> Any: ...

    @classmethod
    def __subclasshook__(cls, candidate: type) -> bool:
        if cls is DeserializationSchema:
            return _defines(candidate, "deserialize")
        return NotImplemented


class BulkWriterFactory(abc.ABC):
    """What ``FileSink.for_bulk_format`` takes: a part file's format (``suffix``) and its
    writer (``open_part(file)``), such as ``ParquetBulkWriters.for_row_type(...)``,
    ``CsvBulkWriters.for_schema(...)`` or ``AvroBulkWriters.for_generic_record(...)``."""

    suffix: str = ""

    @abc.abstractmethod
    def open_part(self, file: Any) -> Any: ...

    @classmethod
    def __subclasshook__(cls, candidate: type) -> bool:
        if cls is BulkWriterFactory:
            return _defines(candidate, "open_part")
        return NotImplemented


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """A record is the message's bytes, as they are."""

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, bytes | bytearray):
            raise TypeError(
                f"ByteArraySchema serializes bytes, got {type(value).__name__}: declare the "
                "stream's type as Types.PRIMITIVE_ARRAY(Types.BYTE()) and give it bytes"
            )
        return bytes(value)

    def deserialize(self, message: bytes) -> bytes:
        return message

    def __repr__(self) -> str:
        return "ByteArraySchema()"


class RowFieldExtractorSchema(SerializationSchema):
    """The bytes of one field of a ``Row`` (or tuple), which must already be bytes: to send
    one field as a Kafka key and another as its value. A null field is an empty message."""

    def __init__(self, field_index: int) -> None:
        if isinstance(field_index, bool) or not isinstance(field_index, int) or field_index < 0:
            raise ValueError(f"Field index must be non-negative, got: {field_index!r}")
        self.field_index = field_index

    def serialize(self, value: Any) -> bytes:
        try:
            field = value[self.field_index]
        except (IndexError, TypeError, KeyError):
            raise ValueError(
                f"RowFieldExtractorSchema({self.field_index}) needs a row with a field "
                f"{self.field_index}, got {value!r:.100}"
            ) from None
        if field is None:
            return b""
        if not isinstance(field, bytes | bytearray):
            raise TypeError(
                f"field {self.field_index} must be bytes, got {type(field).__name__} "
                f"{field!r:.50}: convert it to bytes before the sink"
            )
        return bytes(field)

    def __repr__(self) -> str:
        return f"RowFieldExtractorSchema({self.field_index})"
