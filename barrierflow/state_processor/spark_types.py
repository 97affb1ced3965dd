"""State values as Spark holds them: the Spark type of a declared type (``Types.*``), the type
of untyped values found in a sample, and the conversion of a Python value to what Spark takes
for its type (a ``Row`` to a struct's tuple, an int to a ``Decimal``...).

A declared type gives its Spark type without looking at any value; an untyped state's values
are looked at (a sample of them) and given the type Spark would give them, or refused with an
error naming the state, where Spark cannot hold them (an object of the program's own class).

Spark's types are imported when a function here is called: importing this module loads no
Spark. Performs no I/O.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Iterable
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row

Convert = Callable[[Any], Any]

_LISTS = ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY")


class UnsupportedValueError(TypeError):
    """Values Spark cannot hold, or a type it has none for."""


def spark_type(type_info: TypeInformation | None, what: str) -> Any:
    """The Spark type of ``type_info``; None when it declares nothing (``ANY``,
    ``PICKLED_BYTE_ARRAY``): then the values tell. ``what`` names the column in errors."""
    from pyspark.sql import types as T

    if type_info is None or type_info.name == "PICKLED_BYTE_ARRAY":
        return None
    name = type_info.name
    atomic = {
        "BYTE": T.ByteType, "SHORT": T.ShortType, "INT": T.IntegerType, "LONG": T.LongType,
        "FLOAT": T.FloatType, "DOUBLE": T.DoubleType, "STRING": T.StringType,
        "CHAR": T.StringType, "BOOLEAN": T.BooleanType, "SQL_DATE": T.DateType,
        "SQL_TIMESTAMP": T.TimestampNTZType, "INSTANT": T.TimestampType,
    }  # fmt: skip
    if name in atomic:
        return atomic[name]()
    if name == "BIG_INT":
        return T.DecimalType(38, 0)
    if name == "BIG_DEC":
        return T.DecimalType(38, 18)
    if name in ("ROW", "ROW_NAMED", "TUPLE"):
        names = type_info.field_names or [f"f{i}" for i in range(len(type_info.fields))]
        return T.StructType(
            [
                T.StructField(n, _known(spark_type(t, f"{what}.{n}"), f"{what}.{n}"), True)
                for n, t in zip(names, type_info.fields, strict=True)
            ]
        )
    if name in _LISTS:
        element = _known(spark_type(type_info.fields[0], f"{what}[]"), f"{what}[]")
        return T.ArrayType(element, True)
    if name == "MAP":
        key = _known(spark_type(type_info.fields[0], f"{what} key"), f"{what} key")
        value = _known(spark_type(type_info.fields[1], f"{what} value"), f"{what} value")
        return T.MapType(key, value, True)
    raise UnsupportedValueError(
        f"{what}: Spark has no type for {name}; read it with a KeyedStateReaderFunction that "
        "yields it as a string or a number"
    )


def _known(found: Any, what: str) -> Any:
    if found is None:
        raise UnsupportedValueError(
            f"{what}: a type inside a declared type must be declared too (not "
            "PICKLED_BYTE_ARRAY) for Spark to hold it"
        )
    return found


def infer_type(values: Iterable[Any], what: str) -> Any:
    """The Spark type of the sampled ``values`` of a column (``NullType`` if all are None);
    ``UnsupportedValueError`` naming ``what`` where Spark cannot hold one or they disagree."""
    from pyspark.sql import types as T

    found: Any = T.NullType()
    for value in values:
        found = _merge(found, _type_of(value, what), what)
    return found


def _type_of(value: Any, what: str) -> Any:
    from pyspark.sql import types as T

    if value is None:
        return T.NullType()
    simple = {
        bool: T.BooleanType, int: T.LongType, float: T.DoubleType, str: T.StringType,
        bytes: T.BinaryType, bytearray: T.BinaryType, datetime.date: T.DateType,
    }  # fmt: skip
    kind = type(value)
    if kind in simple:
        return simple[kind]()
    if isinstance(value, datetime.datetime):
        return T.TimestampType() if value.tzinfo is not None else T.TimestampNTZType()
    if isinstance(value, decimal.Decimal):
        return T.DecimalType(38, 18)
    if isinstance(value, Row | tuple):
        return T.StructType(
            [T.StructField(n, _type_of(v, f"{what}.{n}"), True) for n, v in _fields(value)]
        )
    if isinstance(value, list):
        return T.ArrayType(infer_type(value, f"{what}[]"), True)
    if isinstance(value, dict):
        key = infer_type(value.keys(), f"{what} key")
        return T.MapType(key, infer_type(value.values(), f"{what} value"), True)
    raise UnsupportedValueError(
        f"{what} holds {value!r:.80} of type {kind.__module__}.{kind.__qualname__}, which "
        "Spark cannot hold; declare the state's type (Types.ROW_NAMED([...], [...]), ...), or "
        "read it with a KeyedStateReaderFunction that yields rows of plain values"
    )


def _fields(value: Any) -> list[tuple[str, Any]]:
    """The named fields of a Row, or a tuple's as f0, f1..."""
    names = value.get_field_names() if isinstance(value, Row) else None
    return list(zip(names or (f"f{i}" for i in range(len(value))), value, strict=False))


def _merge(a: Any, b: Any, what: str) -> Any:
    from pyspark.sql import types as T

    if isinstance(a, T.NullType):
        return b
    if isinstance(b, T.NullType) or a == b:
        return a
    numbers = (T.LongType, T.DoubleType)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return T.DoubleType()
    if isinstance(a, T.StructType) and isinstance(b, T.StructType) and a.names == b.names:
        return T.StructType(
            [
                T.StructField(x.name, _merge(x.dataType, y.dataType, f"{what}.{x.name}"), True)
                for x, y in zip(a.fields, b.fields, strict=True)
            ]
        )
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return T.ArrayType(_merge(a.elementType, b.elementType, f"{what}[]"), True)
    if isinstance(a, T.MapType) and isinstance(b, T.MapType):
        key = _merge(a.keyType, b.keyType, f"{what} key")
        return T.MapType(key, _merge(a.valueType, b.valueType, f"{what} value"), True)
    raise UnsupportedValueError(
        f"{what} holds values of different types ({a.simpleString()} and {b.simpleString()}); "
        "declare the state's type, or read it with a KeyedStateReaderFunction"
    )


def converter(data_type: Any) -> Convert | None:
    """The conversion of a Python value to what Spark takes for ``data_type``; None where the
    value is taken as it is."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.StructType):
        names = data_type.names
        inner = [converter(f.dataType) for f in data_type.fields]
        return _struct(names, inner)
    if isinstance(data_type, T.ArrayType):
        element = converter(data_type.elementType)
        if element is None:
            return lambda v: None if v is None else list(v)
        return lambda v: None if v is None else [element(x) for x in v]
    if isinstance(data_type, T.MapType):
        key, value = converter(data_type.keyType), converter(data_type.valueType)
        key = key or _same
        value = value or _same
        return lambda v: None if v is None else {key(k): value(x) for k, x in v.items()}
    if isinstance(data_type, T.DecimalType):
        return lambda v: None if v is None else decimal.Decimal(v)
    if isinstance(data_type, T.StringType):
        return lambda v: v if v is None or type(v) is str else str(v)
    return None


def _same(value: Any) -> Any:
    return value


def _struct(names: list[str], inner: list[Convert | None]) -> Convert:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, dict):
            items = [value.get(n) for n in names]
        elif isinstance(value, Row) and value.get_field_names() is not None:
            own = dict(zip(value.get_field_names(), value, strict=False))
            items = [own.get(n) for n in names]
        else:
            items = list(value)
        return tuple(x if c is None else c(x) for c, x in zip(inner, items, strict=False))

    return convert
