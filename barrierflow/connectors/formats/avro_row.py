"""PyFlink's Avro row schemas: a row as one Avro binary datum of a record schema, without a
header or a schema id (Flink's ``AvroRowSerializationSchema``: Avro's binary encoding, as its
specification defines it), on fastavro.

``AvroRowSerializationSchema(avro_schema_string=...)`` writes a Row by position onto the
record's fields (a dict by name); ``AvroRowDeserializationSchema`` reads Rows named by them.
``record_class`` names a Java SpecificRecord class, which needs the JVM: refused, saying so.
Performs no I/O.
"""

from __future__ import annotations

import io
from typing import Any

from barrierflow.connectors.formats.avro_schema import (
    AvroSchema,
    fastavro,
    rows_of,
    to_record,
)
from barrierflow.errors import ConfigurationError


def _schema_of(record_class: str | None, avro_schema_string: str | None, what: str) -> AvroSchema:
    if record_class is not None:
        raise ConfigurationError(
            f"{what}(record_class={record_class!r}) loads a Java SpecificRecord class, which "
            f"needs the JVM: pass the class's schema as {what}(avro_schema_string=...)"
        )
    if avro_schema_string is None:
        raise TypeError("record_class or avro_schema_string should be specified.")
    schema = AvroSchema(avro_schema_string)
    schema.field_names  # noqa: B018 - a schema that is not a record fails here, at the job's definition
    return schema


class AvroRowSerializationSchema:
    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None):
        self.schema = _schema_of(record_class, avro_schema_string, "AvroRowSerializationSchema")
        self._fastavro = fastavro()

    def serialize(self, value: Any) -> bytes:
        out = io.BytesIO()
        try:
            record = to_record(value, self.schema.parsed, {})
            self._fastavro.validation.validate(record, self.schema.parsed, raise_errors=True)
            self._fastavro.schemaless_writer(out, self.schema.parsed, record)
        except Exception as e:  # fastavro's validation errors name the field
            raise ValueError(
                f"cannot write {value!r:.200} as Avro of {self.schema}: {type(e).__name__}: {e}"
            ) from e
        return out.getvalue()

    def __repr__(self) -> str:
        return f"AvroRowSerializationSchema({self.schema})"


class AvroRowDeserializationSchema:
    def __init__(self, record_class: str | None = None, avro_schema_string: str | None = None):
        self.schema = _schema_of(record_class, avro_schema_string, "AvroRowDeserializationSchema")
        self._fastavro = fastavro()
        self._to_row = rows_of(self.schema)

    def deserialize(self, message: bytes) -> Any:
        data = io.BytesIO(message)
        try:
            record = self._fastavro.schemaless_reader(data, self.schema.parsed, None)
        except Exception as e:  # noqa: BLE001 - a truncated or foreign message fails many ways
            raise ValueError(f"not Avro of {self.schema}: {type(e).__name__}: {e}") from None
        if data.tell() != len(message):
            raise ValueError(
                f"not one Avro datum of {self.schema}: {len(message) - data.tell()} bytes "
                "follow the record"
            )
        return self._to_row(record)

    def __repr__(self) -> str:
        return f"AvroRowDeserializationSchema({self.schema})"
