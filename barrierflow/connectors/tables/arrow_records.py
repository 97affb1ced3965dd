"""Records as Arrow: a schema from a pyarrow schema or PyFlink type information, and a batch of
records (dicts, ``Row``s, tuples or lists) converted to it, the record that does not fit named.
Shared by the sinks that write Parquet (``FileSink``'s bulk format, Delta, Iceberg).

**Threading:** any thread; nothing shared. Performs no I/O.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.connectors.files.file_format import RecordEncodingError
from barrierflow.errors import ConfigurationError

ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError)

_SCALARS: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "CHAR": pa.string(),
    "BYTE": pa.int8(),
    "BOOLEAN": pa.bool_(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BIG_DEC": pa.decimal128(38, 18),  # Flink's default precision and scale of BigDecimal
    "INSTANT": pa.timestamp("us", tz="UTC"),
    "SQL_DATE": pa.date32(),
    "SQL_TIME": pa.time64("us"),
    "SQL_TIMESTAMP": pa.timestamp("us"),
    "PICKLED_BYTE_ARRAY": pa.binary(),
}


def arrow_schema(schema: Any, where: str) -> pa.Schema:
    """``schema`` as a pyarrow schema: a pyarrow schema, or ``Types.ROW_NAMED(...)``."""
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, TypeInformation) and schema.name == "ROW_NAMED":
        assert schema.field_names is not None
        return pa.schema(
            [
                pa.field(name, _arrow_type(t, f"{where}, field {name!r}"))
                for name, t in zip(schema.field_names, schema.fields, strict=True)
            ]
        )
    raise ConfigurationError(
        f"{where}: the schema must be a pyarrow.Schema or Types.ROW_NAMED([...], [...]) (the "
        f"table's columns), got {schema!r:.200}"
    )


def _arrow_type(t: TypeInformation, where: str) -> pa.DataType:
    if t.name in _SCALARS:
        return _SCALARS[t.name]
    if t.name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return pa.list_(_arrow_type(t.fields[0], where))
    if t.name == "MAP":
        return pa.map_(_arrow_type(t.fields[0], where), _arrow_type(t.fields[1], where))
    if t.name == "ROW_NAMED":
        return pa.struct(list(arrow_schema(t, where)))
    raise ConfigurationError(
        f"{where}: {t!r} has no table column type; declare the field with a named type "
        "(Types.LONG(), Types.STRING(), Types.ROW_NAMED(...)), or pass a pyarrow schema"
    )


def to_record_batch(records: list[Any], schema: pa.Schema, where: str) -> pa.RecordBatch:
    """``records`` as one batch of ``schema``. A record that does not fit fails it with a
    ``RecordEncodingError`` naming the record and ``where`` (the format or table); to find
    it, the batch is converted again one record at a time, a cost only a failing batch pays."""
    try:
        return _to_batch(records, schema)
    except ARROW_ERRORS:
        by_name = _by_name(records[0])
        for record in records:
            try:
                if _by_name(record) != by_name:
                    raise TypeError("a batch mixes records with field names and without")
                _to_batch([record], schema)
            except ARROW_ERRORS as e:
                raise RecordEncodingError(
                    f"cannot write record {record!r:.200} as {where} with schema "
                    f"{describe(schema)}: {e}"
                ) from e
        raise


def _to_batch(records: list[Any], schema: pa.Schema) -> pa.RecordBatch:
    names = set(schema.names)
    if records and _by_name(records[0]):
        dicts = []
        for record in records:  # pyarrow would make missing or misspelled fields nulls
            d = record.as_dict() if isinstance(record, Row) else record
            if not isinstance(d, dict) or d.keys() != names:
                raise TypeError(f"expected a dict (or named Row) of exactly {sorted(names)}")
            dicts.append(d)
        return pa.RecordBatch.from_pylist(dicts, schema=schema)
    width = len(schema)
    for record in records:
        if not isinstance(record, tuple | list | Row) or len(record) != width:
            raise TypeError(f"expected a dict, a Row or a tuple of {width} fields")
    columns = list(zip(*records, strict=True)) if records else [()] * width
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _by_name(record: Any) -> bool:
    """Whether ``record``'s fields are matched to the columns by name (else by position)."""
    return isinstance(record, dict) or (
        isinstance(record, Row) and record.get_field_names() is not None
    )


def describe(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name}: {f.type}" for f in schema) + ")"


def same_columns(a: pa.Schema, b: pa.Schema) -> bool:
    """Names and types; a large string is a string (delta-rs reads strings back as large
    strings and the like)."""
    if a.names != b.names:
        return False
    return all(_base(x.type) == _base(y.type) for x, y in zip(a, b, strict=True))


def _base(t: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    return t
