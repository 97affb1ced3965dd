"""``Row``: PyFlink's record of positional or named fields, as programs build and print it.

A PyFlink program makes rows (``Row(1, "a")``, ``Row(name="Alice", age=11)``, or a row
"class" ``Person = Row("name", "age")`` called as ``Person("Alice", 11)``), reads them by
position, name or attribute, and prints them: the same behaviour here keeps such a program's
output the same. Named fields given as keywords are sorted by name, as PyFlink sorts them.
Rows pickle by value (fields, values, kind), so they cross processes and sit in state.
Performs no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

__all__ = ["Row", "RowKind"]


class RowKind(enum.Enum):
    """What a row means in a changelog; a DataStream program sees INSERT."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        return _SHORT[self]


_SHORT = {
    RowKind.INSERT: "+I",
    RowKind.UPDATE_BEFORE: "-U",
    RowKind.UPDATE_AFTER: "+U",
    RowKind.DELETE: "-D",
}


def _make_row(fields: list[str] | None, values: tuple[Any, ...], kind: RowKind) -> Row:
    row = Row(*values)
    if fields is not None:
        row.set_field_names(fields)
    row.set_row_kind(kind)
    return row


class Row:
    __slots__ = ("_fields", "_row_kind", "_values")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("a Row takes positional or named fields, not both")
        fields: list[str] | None = None
        if kwargs:
            fields = sorted(kwargs)
            values = [kwargs[n] for n in fields]
        else:
            values = list(args)
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_row_kind", RowKind.INSERT)

    # --- PyFlink's methods ------------------------------------------------------------------

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        if self._fields is None:
            raise TypeError("a Row without field names cannot be turned into a dict")
        if not recursive:
            return dict(zip(self._fields, self._values, strict=False))
        return {n: _as_plain(v) for n, v in zip(self._fields, self._values, strict=False)}

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        """The values of the fields ``names``, in that order (all of them for a row without
        names, as PyFlink's)."""
        if self._fields is None or list(names) == list(self._fields):
            return list(self._values)
        unknown = [n for n in names if n not in self._fields]
        if unknown:
            raise KeyError(f"Field names {unknown} not exist in {list(self._fields)}.")
        return [self._values[self._fields.index(n)] for n in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    def set_row_kind(self, row_kind: RowKind) -> None:
        object.__setattr__(self, "_row_kind", row_kind)

    def set_field_names(self, field_names: list[str]) -> None:
        object.__setattr__(self, "_fields", list(field_names))

    def get_field_names(self) -> list[str] | None:
        return None if self._fields is None else list(self._fields)

    def __call__(self, *values: Any) -> Row:
        """A row whose values are field names is a row "class": calling it makes a row."""
        if len(values) > len(self._values):
            raise ValueError(
                f"{self!r} has {len(self._values)} fields; cannot make a row of {values!r}"
            )
        return _make_row(list(self._values), values, self._row_kind)

    # --- access -----------------------------------------------------------------------------

    def _index(self, name: str) -> int:
        if self._fields is None or name not in self._fields:
            raise KeyError(name)
        return self._fields.index(name)

    def __getitem__(self, item: int | slice | str) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        return self._values[self._index(item)]

    def __setitem__(self, item: int | str, value: Any) -> None:
        if isinstance(item, int):
            self._values[item] = value
        else:
            self._values[self._index(item)] = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[self._index(name)]
        except KeyError:
            raise AttributeError(f"Row has no field {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"set a Row's field by row[{name!r}] = ..., not as an attribute")

    def __contains__(self, item: Any) -> bool:
        return item in self._values

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Row)
            and self._fields == other._fields
            and self._row_kind is other._row_kind
            and self._values == other._values
        )

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __reduce__(self) -> tuple[Any, ...]:
        return _make_row, (self._fields, tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        if self._fields is not None:
            pairs = zip(self._fields, self._values, strict=False)
            return "Row(" + ", ".join(f"{n}={v!r}" for n, v in pairs) + ")"
        return f"<Row({', '.join(map(repr, self._values))})>"


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row):
        return value.as_dict(True)
    if isinstance(value, list):
        return [_as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_plain(v) for k, v in value.items()}
    return value
