"""PyFlink's JSON row schemas: a row as one JSON object keyed by its field names (``f0``,
``f1``... for ``Types.ROW``), as Flink's ``JsonRowSerializationSchema`` writes it.

Values follow Flink's JSON format (compared with PyFlink's bytes): numbers and booleans as
themselves (floating point as Java prints them, ``1.0E20``), a BIG_DEC as a number,
dates as ``yyyy-MM-dd``, times and timestamps as RFC 3339 (``12:30:00Z``,
``2026-01-31T12:30:00.5Z``), a byte array as base64, lists as arrays, maps and nested rows as
objects. Built without a type (``JsonRowSerializationSchema()``), a schema writes and reads
plain JSON values, as barrierflow did before types were given. Performs no I/O.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
from collections.abc import Callable
from typing import Any

import msgspec

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.formats.row_fields import (
    ROW_TYPES,
    field_names,
    make_row,
    row_type,
    row_values,
)
from barrierflow.declared_types.java_strings import java_double, java_float
from barrierflow.errors import ConfigurationError

Convert = Callable[[Any], Any]
_encoder = msgspec.json.Encoder(decimal_format="number")
_decoder = msgspec.json.Decoder(float_hook=decimal.Decimal)
_plain_decoder = msgspec.json.Decoder()
_INTEGERS = ("BYTE", "SHORT", "INT", "LONG", "BIG_INT")
_ARRAYS = ("LIST", "BASIC_ARRAY", "OBJECT_ARRAY", "PRIMITIVE_ARRAY")


def rfc3339_time(value: datetime.time) -> str:
    """Flink's RFC 3339 time: the fraction only when there is one, without trailing zeros."""
    text = value.strftime("%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def rfc3339_timestamp(value: datetime.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(datetime.UTC).replace(tzinfo=None)
    return f"{value.date().isoformat()}T{rfc3339_time(value.time())}"


def _java_number(text: str) -> Any:
    """A float as Java prints it (``1.0E20``); NaN and the infinities as strings, as
    Jackson quotes them."""
    if text in ("NaN", "Infinity", "-Infinity"):
        return text
    return msgspec.Raw(text.encode("ascii"))


def _parse_time(text: str) -> datetime.time:
    return datetime.time.fromisoformat(text.removesuffix("Z"))


def _parse_timestamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.removesuffix("Z"))


# name -> (to JSON, from JSON); None where the value is already what JSON holds
_SCALARS: dict[str, tuple[Convert | None, Convert]] = {
    "STRING": (None, str),
    "CHAR": (None, str),
    "BOOLEAN": (None, bool),
    "FLOAT": (lambda v: _java_number(java_float(v)), float),
    "DOUBLE": (lambda v: _java_number(java_double(v)), float),
    "BIG_DEC": (lambda v: decimal.Decimal(v), decimal.Decimal),
    "SQL_DATE": (lambda v: v.isoformat(), datetime.date.fromisoformat),
    "SQL_TIME": (rfc3339_time, _parse_time),
    "SQL_TIMESTAMP": (rfc3339_timestamp, _parse_timestamp),
    "INSTANT": (rfc3339_timestamp, _parse_timestamp),
}


def _checked_scalar(name: str, parse: Convert) -> Convert:
    """From JSON: the JSON value must be of the kind the type holds, then is converted."""
    kinds: tuple[type, ...] = {
        "BOOLEAN": (bool,),
        "FLOAT": (decimal.Decimal, int, str),
        "DOUBLE": (decimal.Decimal, int, str),
        "BIG_DEC": (decimal.Decimal, int),
    }.get(name, (str,))

    def convert(value: Any) -> Any:
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ValueError(f"{value!r:.100} is not a {name}")
        return parse(value)

    return convert


def _integer_from_json(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r:.100} is not an integer")
    return value


def to_json_converter(type_info: TypeInformation, where: str) -> Convert | None:
    """How a value of ``type_info`` becomes what msgspec writes (None: as it is)."""
    name = type_info.name
    if name in _INTEGERS:
        return None
    if name in _SCALARS:
        return _SCALARS[name][0]
    if name in ROW_TYPES:
        return _row_to_json(type_info, where)
    if name == "PRIMITIVE_ARRAY" and type_info.fields[0].name == "BYTE":
        return lambda v: base64.b64encode(bytes(v)).decode("ascii")
    if name in _ARRAYS:
        element = to_json_converter(type_info.fields[0], f"{where}[]")
        return list if element is None else lambda v: [_none_or(element, e) for e in v]
    if name == "MAP":
        value = to_json_converter(type_info.fields[1], f"{where}{{}}") or (lambda v: v)
        return lambda m: {str(k): _none_or(value, v) for k, v in m.items()}
    raise ConfigurationError(f"JSON rows cannot hold {where} of type {type_info!r}")


def from_json_converter(type_info: TypeInformation, where: str, strict: bool) -> Convert:
    """How what msgspec read becomes a value of ``type_info``; ``strict``: a missing field of
    a row is an error (else None)."""
    name = type_info.name
    if name in _INTEGERS:
        return _integer_from_json
    if name in _SCALARS:
        return _checked_scalar(name, _SCALARS[name][1])
    if name in ROW_TYPES:
        return _row_from_json(type_info, where, strict)
    if name == "PRIMITIVE_ARRAY" and type_info.fields[0].name == "BYTE":
        return _from_base64
    if name in _ARRAYS:
        element = from_json_converter(type_info.fields[0], f"{where}[]", strict)
        return lambda v: [_none_or(element, e) for e in _of_kind(v, list, "an array")]
    if name == "MAP":
        value = from_json_converter(type_info.fields[1], f"{where}{{}}", strict)
        return lambda m: {k: _none_or(value, v) for k, v in _of_kind(m, dict, "an object").items()}
    raise ConfigurationError(f"JSON rows cannot hold {where} of type {type_info!r}")


def _none_or(convert: Convert, value: Any) -> Any:
    return None if value is None else convert(value)


def _of_kind(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"{value!r:.100} is not {what}")
    return value


def _from_base64(value: Any) -> bytes:
    try:
        return base64.b64decode(_of_kind(value, str, "base64 text"), validate=True)
    except binascii.Error as e:
        raise ValueError(f"{value!r:.100} is not base64: {e}") from None


def _row_to_json(type_info: TypeInformation, where: str) -> Convert:
    names = field_names(type_info)
    fields = [
        to_json_converter(t, f"{where}.{n}" if where else n)
        for n, t in zip(names, type_info.fields, strict=True)
    ]

    def convert(record: Any) -> dict[str, Any]:
        values = row_values(record, type_info)
        return {
            n: v if f is None or v is None else f(v)
            for n, f, v in zip(names, fields, values, strict=True)
        }

    return convert


def _row_from_json(type_info: TypeInformation, where: str, strict: bool) -> Convert:
    names = field_names(type_info)
    fields = [
        from_json_converter(t, f"{where}.{n}" if where else n, strict)
        for n, t in zip(names, type_info.fields, strict=True)
    ]

    def convert(document: Any) -> Any:
        _of_kind(document, dict, "a JSON object")
        values = []
        for n, f in zip(names, fields, strict=True):
            if n not in document and strict:
                raise ValueError(f"field {n!r} is missing (fail_on_missing_field)")
            value = document.get(n)
            try:
                values.append(None if value is None else f(value))
            except ValueError as e:
                raise ValueError(f"field {n!r}: {e}") from None
        return make_row(values, names)

    return convert


class JsonRowSerializationSchema:
    """A row as one JSON object (PyFlink's ``JsonRowSerializationSchema.builder()
    .with_type_info(Types.ROW_NAMED(...)).build()``)."""

    def __init__(self, type_info: TypeInformation | None = None) -> None:
        self.type_info = type_info
        self._convert = None
        if type_info is not None:
            self._convert = to_json_converter(row_type(type_info, "JsonRowSerializationSchema"), "")

    @staticmethod
    def builder() -> JsonRowSerializationSchemaBuilder:
        return JsonRowSerializationSchemaBuilder()

    def serialize(self, value: Any) -> bytes:
        try:
            return _encoder.encode(value if self._convert is None else self._convert(value))
        except (TypeError, ValueError, AttributeError, msgspec.EncodeError) as e:
            raise ValueError(f"cannot write {value!r:.200} as JSON: {e}") from e

    def __repr__(self) -> str:
        return f"JsonRowSerializationSchema({self.type_info!r})"


class JsonRowSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: TypeInformation | None = None

    def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchemaBuilder:
        self._type_info = type_info
        return self

    def build(self) -> JsonRowSerializationSchema:
        return JsonRowSerializationSchema(self._type_info)


JsonRowSerializationSchema.Builder = JsonRowSerializationSchemaBuilder  # type: ignore[attr-defined]


class JsonRowDeserializationSchema:
    """A JSON object as a row of the given type (PyFlink's ``JsonRowDeserializationSchema
    .builder().type_info(...).build()``). A message that is not JSON, or not of the type,
    raises ``ValueError`` saying which field; with ``ignore_parse_errors()`` it is skipped
    (``deserialize`` returns None, which sources drop, as Flink's do)."""

    def __init__(
        self,
        type_info: TypeInformation | None = None,
        fail_on_missing_field: bool = False,
        ignore_parse_errors: bool = False,
    ) -> None:
        self.type_info = type_info
        self.fail_on_missing_field = fail_on_missing_field
        self.ignore_parse_errors = ignore_parse_errors
        self._convert = None
        if type_info is not None:
            checked = row_type(type_info, "JsonRowDeserializationSchema")
            self._convert = from_json_converter(checked, "", fail_on_missing_field)

    @staticmethod
    def builder() -> JsonRowDeserializationSchemaBuilder:
        return JsonRowDeserializationSchemaBuilder()

    def deserialize(self, message: bytes) -> Any:
        try:
            if self._convert is None:
                return _plain_decoder.decode(message)
            return self._convert(_decoder.decode(message))
        except msgspec.DecodeError as e:
            if self.ignore_parse_errors:
                return None
            raise ValueError(f"not JSON: {e}") from None
        except ValueError:
            if self.ignore_parse_errors:
                return None
            raise

    def __repr__(self) -> str:
        return f"JsonRowDeserializationSchema({self.type_info!r})"


class JsonRowDeserializationSchemaBuilder:
    def __init__(self) -> None:
        self._type_info: TypeInformation | None = None
        self._fail_on_missing_field = False
        self._ignore_parse_errors = False

    def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchemaBuilder:
        self._type_info = type_info
        return self

    def json_schema(self, json_schema: str) -> JsonRowDeserializationSchemaBuilder:
        raise ConfigurationError(
            "JsonRowDeserializationSchema.builder().json_schema() converts a JSON schema with "
            "Flink's Java converter, which barrierflow does not have: declare the row with "
            ".type_info(Types.ROW_NAMED([...], [...])) instead"
        )

    def fail_on_missing_field(self) -> JsonRowDeserializationSchemaBuilder:
        self._fail_on_missing_field = True
        return self

    def ignore_parse_errors(self) -> JsonRowDeserializationSchemaBuilder:
        self._ignore_parse_errors = True
        return self

    def build(self) -> JsonRowDeserializationSchema:
        return JsonRowDeserializationSchema(
            self._type_info, self._fail_on_missing_field, self._ignore_parse_errors
        )


JsonRowDeserializationSchema.Builder = JsonRowDeserializationSchemaBuilder  # type: ignore[attr-defined]
