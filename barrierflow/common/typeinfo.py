"""PyFlink's type information (``Types.INT()``, ``Types.ROW([...])``), accepted wherever a
PyFlink program passes one (``output_type=``, ``key_type=``, ``type_info=``, state descriptors).

A declared output type converts an operator's results as PyFlink converts them
(``declared_types/conversion.py``: FLOAT is 32-bit, a ROW is a ``Row``) and makes ``print()``
write them as PyFlink's Java sink does (``declared_types/java_strings.py``); with no type,
values stay the Python objects they are. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from barrierflow.errors import ConfigurationError

__all__ = ["TypeInformation", "Types"]


@dataclass(frozen=True)
class TypeInformation:
    """A type: its name (``INT``, ``ROW``...) and, for composite types, its element, field or
    key and value types. Frozen and hashable, so conversions are built once per type."""

    name: str
    fields: tuple[Any, ...] = field(default=())  # element, field or key/value types
    field_names: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        if not self.fields:
            return f"{self.name}()"
        inner = (
            ", ".join(f"{n}: {t!r}" for n, t in zip(self.field_names, self.fields, strict=True))
            if self.field_names
            else ", ".join(map(repr, self.fields))
        )
        return f"{self.name}({inner})"


def checked_type(type_info: Any, what: str) -> TypeInformation | None:
    """``type_info`` if it is type information or None; else a ConfigurationError naming
    ``what`` declared it."""
    if type_info is None or isinstance(type_info, TypeInformation):
        return type_info
    raise ConfigurationError(
        f"{what}: the type must be type information such as Types.INT() (from "
        f"barrierflow.common), got {type_info!r:.100}"
    )


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
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> TypeInformation:
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
