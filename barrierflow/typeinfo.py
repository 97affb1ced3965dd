"""PyFlink's type information (``Types.INT()``, ``Types.ROW([...])``), accepted wherever a
PyFlink program passes one (``output_type=``, ``key_type=``, ``type_info=``, state descriptors).

barrierflow keeps values as the Python objects they are (pickled between processes), so a type
is a declaration it records and does not yet act on: a program that declares types runs, and
prints what it computes. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TypeInformation:
    name: str
    fields: tuple[Any, ...] = field(default=())  # element, field or key/value types
    field_names: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        if not self.fields:
            return f"{self.name}()"
        inner = ", ".join(
            f"{n}: {t!r}" for n, t in zip(self.field_names, self.fields, strict=True)
        ) if self.field_names else ", ".join(map(repr, self.fields))
        return f"{self.name}({inner})"


def _basic(name: str):
    return staticmethod(lambda: TypeInformation(name))


def _check(types: Any, what: str) -> tuple[Any, ...]:
    types = tuple(types)
    for t in types:
        if not isinstance(t, TypeInformation):
            raise TypeError(f"Types.{what} takes type information such as Types.INT(), not {t!r}")
    return types


class Types:
    STRING = _basic("STRING")
    BYTE = _basic("BYTE")
    BOOLEAN = _basic("BOOLEAN")
    SHORT = _basic("SHORT")
    INT = _basic("INT")
    LONG = _basic("LONG")
    FLOAT = _basic("FLOAT")
    DOUBLE = _basic("DOUBLE")
    CHAR = _basic("CHAR")
    BIG_INT = _basic("BIG_INT")
    BIG_DEC = _basic("BIG_DEC")
    INSTANT = _basic("INSTANT")
    SQL_DATE = _basic("SQL_DATE")
    SQL_TIME = _basic("SQL_TIME")
    SQL_TIMESTAMP = _basic("SQL_TIMESTAMP")
    PICKLED_BYTE_ARRAY = _basic("PICKLED_BYTE_ARRAY")

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> TypeInformation:
        return TypeInformation("ROW", _check(field_types, "ROW"))

    @staticmethod
    def ROW_NAMED(
        field_names: list[str], field_types: list[TypeInformation]
    ) -> TypeInformation:
        names = tuple(field_names)
        types = _check(field_types, "ROW_NAMED")
        if len(names) != len(types) or not all(isinstance(n, str) for n in names):
            raise TypeError("Types.ROW_NAMED takes as many field names (str) as field types")
        return TypeInformation("ROW_NAMED", types, names)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TypeInformation:
        return TypeInformation("TUPLE", _check(field_types, "TUPLE"))

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("PRIMITIVE_ARRAY", _check([element_type], "PRIMITIVE_ARRAY"))

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("BASIC_ARRAY", _check([element_type], "BASIC_ARRAY"))

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("OBJECT_ARRAY", _check([element_type], "OBJECT_ARRAY"))

    @staticmethod
    def LIST(element_type: TypeInformation) -> TypeInformation:
        return TypeInformation("LIST", _check([element_type], "LIST"))

    @staticmethod
    def MAP(key_type: TypeInformation, value_type: TypeInformation) -> TypeInformation:
        return TypeInformation("MAP", _check([key_type, value_type], "MAP"))
