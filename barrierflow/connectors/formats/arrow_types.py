"""Arrow schemas of the formats' declared types, for Parquet and ORC: from a row type
(``Types.ROW_NAMED``) and from an Avro record schema. Performs no I/O.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.formats.row_fields import field_names, row_type
from barrierflow.errors import ConfigurationError

_SCALARS = {
    "BYTE": pa.int8(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "LONG": pa.int64(),
    "BIG_INT": pa.int64(),
    "BOOLEAN": pa.bool_(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "CHAR": pa.string(),
    "BIG_DEC": pa.decimal128(38, 18),  # Flink's default DECIMAL precision and scale
    "SQL_DATE": pa.date32(),
    "SQL_TIME": pa.time64("us"),
    "SQL_TIMESTAMP": pa.timestamp("us"),
    "INSTANT": pa.timestamp("us", tz="UTC"),
}


def arrow_schema_of_row_type(type_info: Any, what: str) -> pa.Schema:
    """The Arrow schema of a row type; a pyarrow Schema is taken as it is."""
    if isinstance(type_info, pa.Schema):
        return type_info
    checked = row_type(type_info, what)
    return pa.schema(
        [
            pa.field(n, _arrow_type(t, n))
            for n, t in zip(field_names(checked), checked.fields, strict=True)
        ]
    )


def _arrow_type(type_info: TypeInformation, where: str) -> pa.DataType:
    name = type_info.name
    if name in _SCALARS:
        return _SCALARS[name]
    if name == "PRIMITIVE_ARRAY" and type_info.fields[0].name == "BYTE":
        return pa.binary()
    if name in ("LIST", "BASIC_ARRAY", "OBJECT_ARRAY", "PRIMITIVE_ARRAY"):
        return pa.list_(_arrow_type(type_info.fields[0], f"{where}[]"))
    if name == "MAP":
        key, value = type_info.fields
        return pa.map_(_arrow_type(key, f"{where} key"), _arrow_type(value, f"{where} value"))
    if name in ("ROW", "ROW_NAMED"):
        return pa.struct(
            [
                pa.field(n, _arrow_type(t, f"{where}.{n}"))
                for n, t in zip(field_names(type_info), type_info.fields, strict=True)
            ]
        )
    raise ConfigurationError(f"field {where} has type {type_info!r}, which has no Arrow type")


_AVRO_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_AVRO_LOGICAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "uuid": pa.string(),
}


def arrow_schema_of_avro(parsed: dict[str, Any]) -> pa.Schema:
    """The Arrow schema of a parsed Avro record schema (fastavro's ``parse_schema``)."""
    named: dict[str, Any] = {}
    struct = _avro_type(parsed, named, parsed.get("name", "record"))
    return pa.schema(list(struct))


def _avro_type(schema: Any, named: dict[str, Any], where: str) -> pa.DataType:
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise ConfigurationError(f"Avro field {where}: unknown type {schema!r}")
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            raise ConfigurationError(
                f"Avro field {where}: a union of {schema} has no Parquet column type (only a "
                "type or null)"
            )
        return _avro_type(branches[0], named, where)
    logical = schema.get("logicalType")
    if logical == "decimal":
        return pa.decimal128(schema["precision"], schema.get("scale", 0))
    if logical in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[logical]
    kind = schema["type"]
    if kind == "record":
        struct = pa.struct(
            [
                pa.field(f["name"], _avro_type(f["type"], named, f"{where}.{f['name']}"))
                for f in schema["fields"]
            ]
        )
        named[schema["name"]] = struct
        return struct
    if kind == "array":
        return pa.list_(_avro_type(schema["items"], named, f"{where}[]"))
    if kind == "map":
        return pa.map_(pa.string(), _avro_type(schema["values"], named, f"{where}{{}}"))
    if kind == "enum":
        return pa.string()
    if kind == "fixed":
        return pa.binary(schema["size"])
    return _avro_type(kind, named, where)
