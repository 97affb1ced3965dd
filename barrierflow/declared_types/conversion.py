"""Values as PyFlink delivers them for a declared type: what ``output_type=`` and
``type_info=`` do to a program's values.

PyFlink hands a typed value through Java and back, so a program sees it converted: a FLOAT has
32-bit precision, a ROW arrives as a ``Row`` (fields ``f0``, ``f1``... unless named), a TUPLE
as a tuple, a LIST as a list. Converting the same way keeps a program's results the same. A
value that cannot be of the declared type is refused with a ``TypeError`` naming both, as
PyFlink fails on it (the operator adds the record and where). Converters are built once per
type; ``None`` stands for "keep the value as it is". Performs no I/O.
"""

from __future__ import annotations

import array
import datetime
import decimal
import enum
import functools
import struct
from collections.abc import Callable
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.human_units import counted

Converter = Callable[[Any], Any]
BatchConverter = Callable[[list[Any]], list[Any] | None]

_FLOAT32 = struct.Struct("<f")
_FLOAT32_MAX = 3.4028234663852886e38
_INT_BITS = {"BYTE": 8, "SHORT": 16, "INT": 32, "LONG": 64}


class IntegerOverflow(enum.Enum):
    """What an int beyond a BYTE, SHORT or INT becomes. REFUSE: an error naming it, as
    PyFlink's serializer refuses a function's result. WRAP: Java's narrowing cast (40000 as a
    SHORT is -25536), as PyFlink's ``from_collection`` hands its values to Java; a LONG beyond
    64 bits is refused either way."""

    REFUSE = "refuse"
    WRAP = "wrap"


def _refuse(value: Any, type_info: TypeInformation) -> TypeError:
    return TypeError(f"{value!r:.100} ({type(value).__name__}) is not a {type_info!r}")


class FieldTypeError(TypeError):
    """A value of a row's or tuple's field that is not of the field's type: the message names
    the field (``address.zip`` for a field of a nested row), its type and the value, so that a
    user finds which column their function filled wrongly."""

    def __init__(self, path: str, type_info: TypeInformation, value: Any, detail: str) -> None:
        self.path = path
        self.type_info = type_info
        self.value = value
        self.detail = detail
        type_text = type_info.name if not type_info.fields else repr(type_info)
        super().__init__(
            f"field `{path}` ({type_text}) got {type(value).__name__} {value!r:.100}"
            + (f": {detail}" if detail else "")
        )

    def within(self, name: str) -> FieldTypeError:
        """The same error seen from the row that holds this one's row as field ``name``."""
        return FieldTypeError(f"{name}.{self.path}", self.type_info, self.value, self.detail)


def _field_values(
    names: list[str], types: tuple[TypeInformation, ...], fields: list[Converter], values: Any
) -> list[Any]:
    """Each field's value converted, or a ``FieldTypeError`` naming the first that fails."""
    out = []
    for name, type_info, convert, value in zip(names, types, fields, values, strict=True):
        try:
            out.append(convert(value))
        except FieldTypeError as e:
            raise e.within(name) from None
        except TypeError as e:
            # a scalar's own message says only what the field's name and type now say
            raise FieldTypeError(
                name, type_info, value, str(e) if type_info.fields else ""
            ) from None
    return out


def float32(value: float) -> float:
    """The float nearest ``value`` that a 32-bit float holds (PyFlink's FLOAT)."""
    nearest: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    return nearest


@functools.cache
def value_converter(
    type_info: TypeInformation, overflow: IntegerOverflow = IntegerOverflow.REFUSE
) -> Converter | None:
    """The conversion ``type_info`` applies, or None when values stay as they are."""
    name = type_info.name
    if name == "PICKLED_BYTE_ARRAY":
        return None
    if name in _INT_BITS:
        return _integer(type_info, _INT_BITS[name], overflow)
    if name in _SCALARS:
        return _scalar(type_info, *_SCALARS[name])
    if name in ("ROW", "ROW_NAMED"):
        return _row(type_info, overflow)
    if name == "TUPLE":
        return _tuple(type_info, overflow)
    if name in ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY"):
        return _list(type_info, overflow)
    if name == "MAP":
        return _map(type_info, overflow)
    raise TypeError(f"no conversion for {type_info!r}")


def _nullable(convert: Converter) -> Converter:
    return lambda v: None if v is None else convert(v)


def _integer(type_info: TypeInformation, bits: int, overflow: IntegerOverflow) -> Converter:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    wrap = overflow is IntegerOverflow.WRAP and bits < 64

    def convert(value: Any) -> int:
        if type(value) is not int:
            raise _refuse(value, type_info)
        if not low <= value <= high:
            if not wrap:
                raise _refuse(value, type_info)
            return (value - low) % (1 << bits) + low
        return value

    return _nullable(convert)


def _to_float32(value: Any) -> float:
    return float32(float(value))


def _to_date(value: Any) -> datetime.date:
    if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
        raise TypeError
    return value


# name -> (accepted Python types, conversion)
_SCALARS: dict[str, tuple[tuple[type, ...], Converter]] = {
    "STRING": ((str,), str),
    "CHAR": ((str,), str),
    "BOOLEAN": ((bool,), bool),
    "BIG_INT": ((int,), int),
    "FLOAT": ((float, int), _to_float32),
    "DOUBLE": ((float, int), float),
    "BIG_DEC": ((decimal.Decimal, int, str), decimal.Decimal),
    "SQL_DATE": ((datetime.date,), _to_date),
    "SQL_TIME": ((datetime.time,), lambda v: v),
    "SQL_TIMESTAMP": ((datetime.datetime,), lambda v: v),
    "INSTANT": ((datetime.datetime,), lambda v: v),
}


def _scalar(
    type_info: TypeInformation, accepted: tuple[type, ...], conversion: Converter
) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, accepted) or (type(value) is bool and bool not in accepted):
            raise _refuse(value, type_info)
        try:
            return conversion(value)
        except (TypeError, ValueError, ArithmeticError):
            raise _refuse(value, type_info) from None

    return _nullable(convert)


def _fields_of(type_info: TypeInformation, overflow: IntegerOverflow) -> list[Converter]:
    return [value_converter(t, overflow) or (lambda v: v) for t in type_info.fields]


def _row(type_info: TypeInformation, overflow: IntegerOverflow) -> Converter:
    names = list(type_info.field_names or (f"f{i}" for i in range(len(type_info.fields))))
    fields = _fields_of(type_info, overflow)
    arity = len(fields)

    named = type_info.field_names is not None

    def convert(value: Any) -> Row:
        if isinstance(value, dict):
            try:
                value = [value[n] for n in names]
            except KeyError as e:
                raise TypeError(f"{value!r:.100} has no field {e} of {type_info!r}") from None
        elif not isinstance(value, (Row, tuple, list)):
            raise _refuse(value, type_info)
        elif named and isinstance(value, Row):
            _check_names(value, names, type_info)
        if len(value) != arity:
            raise TypeError(
                f"{value!r:.100} has {counted(len(value), 'field')}, {type_info!r} has {arity}"
            )
        row = Row(*_field_values(names, type_info.fields, fields, value))
        row.set_field_names(names)
        if isinstance(value, Row):
            row.set_row_kind(value.get_row_kind())
        return row

    return _nullable(convert)


def _check_names(row: Row, names: list[str], type_info: TypeInformation) -> None:
    """A row whose field names are not the declared ones, in their order, is refused: its
    values would land in other fields by position (a keyword ``Row`` sorts its fields by name,
    as PyFlink's does)."""
    given = row.get_field_names()
    if given is not None and given != names:
        raise TypeError(
            f"a Row with fields {given} where {type_info!r} declares {names}: its values would "
            "go to the declared fields by position (a Row(name=value, ...) sorts its fields by "
            "name); build it positionally in the declared order, or as a dict"
        )


def _tuple(type_info: TypeInformation, overflow: IntegerOverflow) -> Converter:
    fields = _fields_of(type_info, overflow)
    names = [f"f{i}" for i in range(len(fields))]  # Flink's names of a tuple's fields

    def convert(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, (tuple, list, Row)) or len(value) != len(fields):
            raise _refuse(value, type_info)
        return tuple(_field_values(names, type_info.fields, fields, value))

    return _nullable(convert)


def _list(type_info: TypeInformation, overflow: IntegerOverflow) -> Converter:
    element = value_converter(type_info.fields[0], overflow)

    def convert(value: Any) -> list[Any]:
        if isinstance(value, (str, bytes, bytearray, memoryview, dict)) or not hasattr(
            value, "__iter__"
        ):
            raise _refuse(value, type_info)
        return list(value) if element is None else [element(v) for v in value]

    return _nullable(convert)


def _map(type_info: TypeInformation, overflow: IntegerOverflow) -> Converter:
    key = value_converter(type_info.fields[0], overflow) or (lambda v: v)
    val = value_converter(type_info.fields[1], overflow) or (lambda v: v)

    def convert(value: Any) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise _refuse(value, type_info)
        return {key(k): val(v) for k, v in value.items()}

    return _nullable(convert)


def plain_type(type_info: TypeInformation) -> tuple[type, float | None, float | None] | None:
    """The Python type whose values are of ``type_info`` as they are, and, for an integer
    or FLOAT, its bounds: a value of that very type (and within them) needs no check. None where
    there is no such type (containers, rows, dates...)."""
    name = type_info.name
    if name in _INT_BITS:
        bits = _INT_BITS[name]
        return int, -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if name == "FLOAT":  # beyond a 32-bit float's range, the full check decides
        return float, -_FLOAT32_MAX, _FLOAT32_MAX
    plain = {"BIG_INT": int, "STRING": str, "CHAR": str, "BOOLEAN": bool, "DOUBLE": float}
    return None if name not in plain else (plain[name], None, None)


# --- whole buffers ------------------------------------------------------------------------------


@functools.cache
def batch_converter(type_info: TypeInformation) -> BatchConverter | None:
    """A fast conversion of a whole list, for the common case where every value is of the
    plain Python type the declared type wants (no None, no side output): it checks the list in
    C (``set(map(type, values))``, ``min``, ``max``, ``zip``, ``array``) rather than value by
    value, and returns the list itself where values are only checked. It returns None for any
    other list, which the caller then converts value by value
    (naming the first value that is not of the type); None too for types without one."""
    name = type_info.name
    if name in _INT_BITS:
        bits = _INT_BITS[name]
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

        def integers(values: list[Any]) -> list[Any] | None:
            if set(map(type, values)) != {int} or min(values) < low or max(values) > high:
                return None
            return values

        return integers
    if name in ("STRING", "CHAR", "DOUBLE", "BOOLEAN"):
        wanted = {"DOUBLE": float, "BOOLEAN": bool}.get(name, str)
        return lambda values: values if set(map(type, values)) == {wanted} else None
    if name == "FLOAT":
        # array('f') stores 32-bit floats: the rounding PyFlink's FLOAT makes, done in C
        return lambda values: (
            array.array("f", values).tolist()
            if values and set(map(type, values)) <= {float, int}
            else None
        )
    if name == "TUPLE":
        # per field: its fast conversion, or None where values stay as they are
        columns = [batch_converter(t) if value_converter(t) else None for t in type_info.fields]
        fields = zip(columns, type_info.fields, strict=True)
        if any(c is None and value_converter(t) for c, t in fields):
            return None  # a field without a fast conversion: value by value
        arity = len(columns)

        def tuples(values: list[Any]) -> list[Any] | None:
            if set(map(type, values)) != {tuple} or set(map(len, values)) != {arity}:
                return None
            cols: list[Any] = list(zip(*values, strict=True))
            changed = False
            for i, convert in enumerate(columns):
                if convert is not None:
                    column = convert(cols[i])  # the same object when only checked
                    if column is None:
                        return None
                    if column is not cols[i]:
                        cols[i], changed = column, True
            # most fields are only checked (ints, strings): the tuples stay as they are
            return list(zip(*cols, strict=True)) if changed else values

        return tuples
    return None
