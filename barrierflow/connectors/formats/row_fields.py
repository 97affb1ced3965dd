"""The fields of a row type as the formats read and write them: names (``f0``, ``f1``... for
``Types.ROW``, as Flink names them), a record's values in field order, and a ``Row`` made of
values read. Performs no I/O.
"""

from __future__ import annotations

from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.errors import ConfigurationError

ROW_TYPES = ("ROW", "ROW_NAMED")


def row_type(type_info: Any, what: str) -> TypeInformation:
    """``type_info`` if it is a row type; else a ConfigurationError naming ``what``."""
    if not isinstance(type_info, TypeInformation) or type_info.name not in ROW_TYPES:
        raise ConfigurationError(
            f"{what} needs a row type such as Types.ROW_NAMED(['id', 'name'], [Types.INT(), "
            f"Types.STRING()]), got {type_info!r:.200}"
        )
    return type_info


def field_names(type_info: TypeInformation) -> list[str]:
    if type_info.field_names is not None:
        return list(type_info.field_names)
    return [f"f{i}" for i in range(len(type_info.fields))]


def row_values(record: Any, type_info: TypeInformation) -> list[Any]:
    """The values of ``record`` (a Row, tuple, list, or dict keyed by field name) in the order
    of ``type_info``'s fields. Raises ``TypeError`` saying how it does not fit."""
    names = field_names(type_info)
    if isinstance(record, dict):
        missing = [n for n in names if n not in record]
        if missing:
            raise TypeError(f"the record has no field {missing[0]!r} of {type_info!r}")
        return [record[n] for n in names]
    if not isinstance(record, Row | tuple | list):
        raise TypeError(f"a {type(record).__name__} is not a row of {type_info!r}")
    if len(record) != len(names):
        raise TypeError(f"the record has {len(record)} fields, {type_info!r} has {len(names)}")
    return list(record)


def make_row(values: list[Any], names: list[str]) -> Row:
    row = Row(*values)
    row.set_field_names(names)
    return row
