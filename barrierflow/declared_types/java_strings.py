"""Typed values written as PyFlink's ``print()`` writes them.

PyFlink prints a stream with a declared type on the Java side, so a program's output shows
Java's ``toString``: ``(hello,3)`` for a TUPLE, ``[1.0E7, 0.5]`` for a LIST of DOUBLE,
``true`` for a BOOLEAN, ``null`` for None. A stream without a type is printed as
``str(value)``, in Python, and so is a ROW (as ``+I[a,1.5,True]``: PyFlink makes its text in
Python), as PyFlink does. Matching both keeps a program's output the
same line for line. Maps print in their Python order (Java's follows its hashing).
Performs no I/O.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
from collections.abc import Callable
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.declared_types.conversion import float32

Printer = Callable[[Any], str]


@functools.cache
def printer(type_info: TypeInformation | None) -> Printer:
    """How ``print()`` writes a value of ``type_info`` (None: an untyped stream)."""
    if type_info is None or type_info.name == "PICKLED_BYTE_ARRAY":
        return str
    if type_info.name in ("ROW", "ROW_NAMED"):
        return _python_row  # PyFlink turns a row into text in Python
    return _java(type_info)


def java_text(type_info: TypeInformation | None) -> Printer:
    """Java's ``toString`` of a value of ``type_info``, rows included (``+I[a, 1]``): what a
    Java sink of Flink's sees of a typed record."""
    return _java(type_info)


def _python_row(row: Any) -> str:
    kind = row.get_row_kind().short_string() if isinstance(row, Row) else "+I"
    return kind + "[" + ",".join(map(str, row)) + "]"


def _java(type_info: TypeInformation | None) -> Printer:
    """Java's toString, also for a field inside a row or tuple (where Flink prints arrays by
    their elements)."""
    if type_info is None or type_info.name == "PICKLED_BYTE_ARRAY":
        return _nullable(_untyped)
    name = type_info.name
    if name in ("ROW", "ROW_NAMED"):
        fields = [_java(t) for t in type_info.fields]
        return _nullable(lambda r: _row_kind(r) + "[" + _joined(fields, r, ", ") + "]")
    if name == "TUPLE":
        fields = [_java(t) for t in type_info.fields]
        return _nullable(lambda t: "(" + _joined(fields, t, ",") + ")")
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        element = _java(type_info.fields[0])
        return _nullable(lambda xs: "[" + ", ".join(element(x) for x in xs) + "]")
    if name == "MAP":
        key, value = (_java(t) for t in type_info.fields)
        return _nullable(
            lambda m: "{" + ", ".join(f"{key(k)}={value(v)}" for k, v in m.items()) + "}"
        )
    return _nullable(_SCALARS.get(name, str))


def _nullable(printer: Printer) -> Printer:
    return lambda v: "null" if v is None else printer(v)


def _joined(fields: list[Printer], values: Any, sep: str) -> str:
    return sep.join(p(v) for p, v in zip(fields, values, strict=False))


def _row_kind(row: Any) -> str:
    return row.get_row_kind().short_string() if isinstance(row, Row) else "+I"


def _untyped(value: Any) -> str:
    """A pickled field of a typed row: Java sees bytes; print the Python value instead."""
    return str(value)


def java_double(value: float, significant: int | None = None) -> str:
    """Java's ``Double.toString`` (``significant``: the digits a float32 needs, for
    ``Float.toString``): the shortest digits that read back to the same value, in plain
    notation from 10^-3 up to 10^7, else as ``d.dddE±n``; at least one digit after the
    point."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = repr(value) if significant is None else f"{value:.{significant - 1}e}"
    sign = "-" if value < 0 else ""
    decimal_value = abs(decimal.Decimal(shortest)).normalize()
    if 1e-3 <= abs(value) < 1e7:
        text = format(decimal_value, "f")
        return sign + (text if "." in text else text + ".0")
    digits = "".join(map(str, decimal_value.as_tuple().digits))
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{decimal_value.adjusted()}"


def java_float(value: float) -> str:
    """Java's ``Float.toString`` of a FLOAT: the fewest digits that read back to the same
    32-bit float."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return java_double(value)
    narrowed = float32(value)
    for significant in range(1, 10):
        if float32(float(f"{narrowed:.{significant - 1}e}")) == narrowed:
            return java_double(narrowed, significant)
    return java_double(narrowed)


def _java_timestamp(ts: datetime.datetime) -> str:
    """``java.sql.Timestamp.toString``: fractional seconds always, without trailing zeros."""
    fraction = f"{ts.microsecond:06d}".rstrip("0") or "0"
    return ts.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction


_SCALARS: dict[str, Printer] = {
    "BOOLEAN": lambda b: "true" if b else "false",
    "FLOAT": java_float,
    "DOUBLE": java_double,
    "BIG_DEC": lambda d: str(d),
    "SQL_DATE": lambda d: d.isoformat(),
    "SQL_TIME": lambda t: t.strftime("%H:%M:%S"),
    "SQL_TIMESTAMP": _java_timestamp,
}
