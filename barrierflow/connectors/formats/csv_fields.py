"""CSV fields as text, by declared type, for the CSV row schemas and the CSV file formats.

Values are written as Flink's CSV format writes them: booleans ``true``/``false``, floating
point numbers as Java prints them (``1.0E7``), dates
``yyyy-MM-dd``, times ``HH:mm:ss``, timestamps as Java's ``Timestamp.toString()``
(``2026-01-31 12:30:00.0``), byte arrays as base64, arrays as their elements joined by the
array element delimiter; a null as the null literal (empty by default). Reading, an empty
field of a type other than STRING, or the null literal, is null. Performs no I/O.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.declared_types.java_strings import java_double, java_float
from barrierflow.errors import ConfigurationError

ToText = Callable[[Any], str]
FromText = Callable[[str], Any]
_INTEGERS = ("BYTE", "SHORT", "INT", "LONG", "BIG_INT")
_ARRAYS = ("LIST", "BASIC_ARRAY", "OBJECT_ARRAY", "PRIMITIVE_ARRAY")


def java_timestamp(value: datetime.datetime) -> str:
    fraction = f"{value.microsecond:06d}".rstrip("0") or "0"
    return f"{value.date().isoformat()} {value.strftime('%H:%M:%S')}.{fraction}"


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"{text!r:.100} is not a BOOLEAN (true or false)")
    return lowered == "true"


def _bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise ValueError(f"{text!r:.100} is not base64: {e}") from None


def _of(kinds: tuple[type, ...], to_text: ToText) -> ToText:
    """``to_text`` for values of ``kinds`` only (a bool is no number here)."""

    def checked(value: Any) -> str:
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise TypeError(f"a {type(value).__name__}")
        return to_text(value)

    return checked


# name -> (to text, from text)
_SCALARS: dict[str, tuple[ToText, FromText]] = {
    "STRING": (_of((str,), str), str),
    "CHAR": (_of((str,), str), str),
    "BOOLEAN": (_of((bool,), lambda v: "true" if v else "false"), _boolean),
    "FLOAT": (_of((float, int), java_float), float),
    "DOUBLE": (_of((float, int), java_double), float),
    "BIG_DEC": (_of((decimal.Decimal, int), str), decimal.Decimal),
    "SQL_DATE": (lambda v: v.isoformat(), datetime.date.fromisoformat),
    "SQL_TIME": (lambda v: v.strftime("%H:%M:%S"), datetime.time.fromisoformat),
    "SQL_TIMESTAMP": (java_timestamp, datetime.datetime.fromisoformat),
}
for _name in _INTEGERS:
    _SCALARS[_name] = (_of((int,), str), int)


@dataclass(frozen=True)
class FieldCodec:
    """One column: its name, and how its values become text and back."""

    name: str
    type_info: TypeInformation
    to_text: ToText
    from_text: FromText
    is_string: bool
    is_text: bool  # written as text (quoted where needed), not as a number or a boolean


_UNQUOTED = (*_INTEGERS, "FLOAT", "DOUBLE", "BIG_DEC", "BOOLEAN")


def field_codec(name: str, type_info: TypeInformation, array_delimiter: str) -> FieldCodec:
    """Raises ConfigurationError for a type a CSV field cannot hold (nested rows, maps)."""
    to_text, from_text = _codec(name, type_info, array_delimiter)
    kind = type_info.name
    return FieldCodec(
        name, type_info, to_text, from_text, kind in ("STRING", "CHAR"), kind not in _UNQUOTED
    )


def _codec(name: str, type_info: TypeInformation, array_delimiter: str) -> tuple[ToText, FromText]:
    kind = type_info.name
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "PRIMITIVE_ARRAY" and type_info.fields[0].name == "BYTE":
        return (lambda v: base64.b64encode(bytes(v)).decode("ascii"), _bytes)
    if kind in _ARRAYS and type_info.fields[0].name in _SCALARS:
        to_element, from_element = _SCALARS[type_info.fields[0].name]
        if not array_delimiter:
            raise ConfigurationError(
                f"CSV column {name!r} is an array, but the array element separator is disabled"
            )

        def to_text(values: Any) -> str:
            return array_delimiter.join("" if v is None else to_element(v) for v in values)

        def from_text(text: str) -> list[Any]:
            return [from_element(t) if t else None for t in text.split(array_delimiter)]

        return to_text, from_text
    raise ConfigurationError(
        f"CSV column {name!r} has type {type_info!r}, which a CSV field cannot hold: use "
        "scalars, or arrays of scalars"
    )


def write_field(codec: FieldCodec, value: Any) -> str | None:
    if value is None:
        return None
    try:
        return codec.to_text(value)
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(
            f"field {codec.name!r}: {value!r:.100} is not a {codec.type_info!r}"
        ) from e


def read_field(codec: FieldCodec, text: str, null_literal: str | None) -> Any:
    if null_literal is not None and text == null_literal:
        return None
    if not text and not codec.is_string:
        return None
    try:
        return codec.from_text(text if codec.is_string else text.strip())
    except (TypeError, ValueError, ArithmeticError) as e:
        raise ValueError(f"field {codec.name!r}: {text!r:.100} is not a {codec.type_info!r}") from e
