"""PyFlink's ``AvroSchema`` (an Avro schema parsed from JSON) and ``GenericRecordAvroTypeInfo``
(the type of a stream of Avro generic records: dicts keyed by field name), on fastavro, and
the conversions between rows and Avro records that the Avro formats share.

A ``Row`` (or tuple) is written as a record by position, as Flink maps a row's fields onto
the schema's; a dict by field name. Records read are Rows named by the schema's fields.
Performs no I/O, except ``AvroSchema.parse_file``, which reads the file it is given.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.formats.row_fields import make_row
from barrierflow.errors import ConfigurationError


def fastavro() -> Any:
    return require("fastavro", "avro", "Avro formats")


class AvroSchema:
    """An Avro schema; ``str()`` is its JSON. ``parsed`` is fastavro's form of it."""

    definition: Any  # the schema as JSON values

    def __init__(self, schema: Any) -> None:
        if isinstance(schema, AvroSchema):
            schema = schema.definition
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as e:
                raise ConfigurationError(f"an Avro schema must be JSON: {e}") from None
        self.definition = schema
        try:
            self.parsed = fastavro().parse_schema(schema)
        except Exception as e:  # noqa: BLE001 - fastavro raises several kinds for a bad schema
            raise ConfigurationError(f"not an Avro schema: {type(e).__name__}: {e}") from None

    @staticmethod
    def parse_string(json_schema: str) -> AvroSchema:
        return AvroSchema(json_schema)

    @staticmethod
    def parse_file(file_path: str) -> AvroSchema:
        return AvroSchema(Path(file_path).read_text())

    @property
    def field_names(self) -> list[str]:
        if not isinstance(self.parsed, dict) or self.parsed.get("type") != "record":
            raise ConfigurationError(f"the Avro schema {self} is not a record")
        return [f["name"] for f in self.parsed["fields"]]

    def __str__(self) -> str:
        return json.dumps(self.definition, separators=(",", ":"))

    def __repr__(self) -> str:
        return f"AvroSchema({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AvroSchema) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))


def avro_schema(schema: Any, what: str) -> AvroSchema:
    if isinstance(schema, AvroSchema):
        return schema
    if isinstance(schema, str | dict):
        return AvroSchema(schema)
    raise ConfigurationError(
        f"{what} needs an AvroSchema (AvroSchema.parse_string(json)), got {schema!r:.100}"
    )


@dataclass(frozen=True, init=False, repr=False)
class GenericRecordAvroTypeInfo(TypeInformation):
    """The records of the stream are Avro generic records of ``schema`` (dicts by field name);
    they travel between operators as Python objects."""

    schema: AvroSchema | None = None

    def __init__(self, schema: AvroSchema) -> None:
        object.__setattr__(self, "name", "PICKLED_BYTE_ARRAY")
        object.__setattr__(self, "fields", ())
        object.__setattr__(self, "field_names", None)
        object.__setattr__(self, "schema", avro_schema(schema, "GenericRecordAvroTypeInfo"))

    def __repr__(self) -> str:
        return f"GenericRecordAvroTypeInfo({self.schema})"


def to_record(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    """``value`` as fastavro writes ``schema``: rows (and tuples) of a record become dicts, by
    position. ``named``: the named types of the schema, by name."""
    if isinstance(schema, str):
        schema = named.get(schema, schema)
    if isinstance(schema, list):  # a union: the record branch for a row, else as it is
        if isinstance(value, Row | tuple):
            records = [s for s in schema if _kind(s, named) == "record"]
            if records:
                return to_record(value, records[0], named)
        return value
    kind = _kind(schema, named)
    if kind == "record":
        if isinstance(schema, dict) and "name" in schema:
            named.setdefault(schema["name"], schema)
        fields = schema["fields"]
        if isinstance(value, Row | tuple | list):
            if len(value) != len(fields):
                raise TypeError(
                    f"{value!r:.100} has {len(value)} fields, the record {schema.get('name')} "
                    f"has {len(fields)}"
                )
            return {
                f["name"]: to_record(v, f["type"], named)
                for f, v in zip(fields, value, strict=True)
            }
        if isinstance(value, dict):
            return {f["name"]: to_record(value.get(f["name"]), f["type"], named) for f in fields}
        return value
    if kind == "array" and isinstance(value, list | tuple):
        return [to_record(v, schema["items"], named) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: to_record(v, schema["values"], named) for k, v in value.items()}
    return value


def _kind(schema: Any, named: dict[str, Any]) -> str | None:
    if isinstance(schema, str):
        schema = named.get(schema, schema)
    if isinstance(schema, dict):
        return schema.get("type")
    return schema if isinstance(schema, str) else None


def rows_of(schema: AvroSchema) -> Any:
    """A function turning records read with ``schema`` into Rows (maps stay dicts)."""
    return lambda record: _row_of(record, schema.parsed, {})


def _row_of(value: Any, schema: Any, named: dict[str, Any]) -> Any:
    if value is None:
        return None
    if isinstance(schema, str):
        schema = named.get(schema, schema)
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        records = [s for s in branches if _kind(s, named) == "record"]
        if isinstance(value, dict) and records and len(branches) == 1:
            return _row_of(value, records[0], named)
        return value
    kind = _kind(schema, named)
    if kind == "record":
        named.setdefault(schema.get("name", ""), schema)
        fields = schema["fields"]
        return make_row(
            [_row_of(value.get(f["name"]), f["type"], named) for f in fields],
            [f["name"] for f in fields],
        )
    if kind == "array":
        return [_row_of(v, schema["items"], named) for v in value]
    if kind == "map":
        return {k: _row_of(v, schema["values"], named) for k, v in value.items()}
    return value
