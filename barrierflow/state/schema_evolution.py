"""Schema evolution of typed keyed state: whether the state a snapshot holds can be read as the
types the job now declares, and the function that migrates each stored value.

Flink's rules for POJO state and those of Spark's ``transformWithState`` for Avro state
(docs/adr/0016-state-processor-fsck-schema-evolution.md):

- a row (``ROW_NAMED``; a ``ROW`` is one whose fields are named ``f0``, ``f1``...) may add
  fields (their default, ``descriptor.set_field_defaults``, else None), remove fields and
  reorder them; a field matches the field of the same name;
- numbers may widen: ``BYTE`` -> ``SHORT`` -> ``INT`` -> ``LONG``, ``FLOAT`` -> ``DOUBLE``;
- the element of a ``LIST`` (and the arrays), the fields of a ``TUPLE``, the value of a ``MAP``
  (and a map state's) may change in these ways; a map's keys may only widen;
- refused, naming the state and the field: renaming a field (a field gone while another of
  its type appears at its place: the old values would be dropped without a word; add the new
  field elsewhere, or in a restore of its own), narrowing a number, any other change of a type,
  changing a state's kind (and, per operator, its key type: ``coordination/state_mapping.py``);
- no type on either side is no change: an untyped value stays as it was stored, and a type
  declared later only checks what is written.

Performs no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.common.types import Row
from barrierflow.declared_types.conversion import value_converter
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.state_schema import declared_text, state_type_info, type_text
from barrierflow.state.ttl_state import TtlValue

Convert = Callable[[Any], Any]

_INTEGERS = ("BYTE", "SHORT", "INT", "LONG")
_FLOATS = ("FLOAT", "DOUBLE")
_LISTS = ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY")


class Compatibility(enum.Enum):
    UNCHANGED = "unchanged"
    MIGRATE = "will migrate"
    INCOMPATIBLE = "incompatible"


@dataclass(frozen=True)
class SchemaChange:
    """What becomes of one state between a snapshot and the job that restores it."""

    state: str
    compatibility: Compatibility
    changes: tuple[str, ...] = ()  # what migrates, e.g. "field 'zip' added (default None)"
    reason: str = ""  # why it is incompatible, naming the field
    convert: Convert | None = field(default=None, compare=False)  # one element's migration

    def describe(self) -> str:
        if self.compatibility is Compatibility.MIGRATE:
            return f"will migrate: {'; '.join(self.changes)}"
        if self.compatibility is Compatibility.INCOMPATIBLE:
            return f"incompatible: {self.reason}"
        return "unchanged"


class IncompatibleStateError(ValueError):
    """A restored state the job declares in a way its stored values cannot be read as."""

    def __init__(self, change: SchemaChange, where: str = "") -> None:
        self.change = change
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}state {change.state!r} cannot be restored: {change.reason}; declare it "
            "as the snapshot holds it, or give the state another name (its values are then "
            "dropped). `barrierflow run JOB -s PATH --dry-run` lists every such state"
        )


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def compare(
    name: str,
    old_kind: StateKind,
    old_text: str | None,
    descriptor: StateDescriptor,
) -> SchemaChange:
    """How the state ``name`` a snapshot recorded as ``old_kind`` of type ``old_text`` (None:
    no declared type) reads as ``descriptor`` declares it."""
    if old_kind is not descriptor.kind:
        return SchemaChange(
            name,
            Compatibility.INCOMPATIBLE,
            reason=f"it was {old_kind.value} state and is now declared as "
            f"{descriptor.kind.value} state; a state's kind cannot change",
        )
    new_text = declared_text(descriptor)
    if old_text is None or new_text is None or old_text == new_text:
        return SchemaChange(name, Compatibility.UNCHANGED)
    defaults = descriptor.field_defaults or {}
    old_type = state_type_info(old_kind, old_text)
    new_type = state_type_info(descriptor.kind, new_text)
    changes: list[str] = []
    try:
        if descriptor.kind is StateKind.MAP:
            if _plan(old_type[0], new_type[0], "{key}", {}, changes) is not None:
                raise _Refused("a map state's keys may only widen")
            convert = _plan(old_type[1], new_type[1], "", defaults, changes)
        else:
            convert = _plan(old_type, new_type, "", defaults, changes)
    except _Refused as refused:
        return SchemaChange(name, Compatibility.INCOMPATIBLE, reason=refused.reason)
    if not changes:
        return SchemaChange(name, Compatibility.UNCHANGED)
    return SchemaChange(name, Compatibility.MIGRATE, tuple(changes), convert=convert)


def _plan(
    old: TypeInformation | None,
    new: TypeInformation | None,
    path: str,
    defaults: dict[str, Any],
    changes: list[str],
) -> Convert | None:
    """The migration of a value of ``old`` to ``new`` (None: it stays as it is), noting each
    change in ``changes``; ``_Refused`` when there is none."""
    if old is None or new is None or old == new:
        return None
    if _is_row(old) and _is_row(new):
        return _plan_row(old, new, path, defaults, changes)
    for chain in (_INTEGERS, _FLOATS):
        if old.name in chain and new.name in chain:
            if chain.index(new.name) < chain.index(old.name):
                raise _Refused(f"{_what(path)} narrows from {old.name} to {new.name}")
            changes.append(f"{_what(path)} widens from {old.name} to {new.name}")
            return None
    if old.name == new.name and old.name in _LISTS:
        element = _plan(old.fields[0], new.fields[0], f"{path}[]", defaults, changes)
        return None if element is None else _each(element)
    if old.name == new.name == "MAP":
        if _plan(old.fields[0], new.fields[0], f"{path}{{key}}", {}, changes) is not None:
            raise _Refused(f"the keys of {_what(path)} may only widen")
        value = _plan(old.fields[1], new.fields[1], f"{path}{{}}", defaults, changes)
        return None if value is None else _each_value(value)
    if old.name == new.name == "TUPLE" and len(old.fields) == len(new.fields):
        converts = [
            _plan(o, n, f"{path}.{i}", defaults, changes)
            for i, (o, n) in enumerate(zip(old.fields, new.fields, strict=True))
        ]
        return None if not any(converts) else _tuple_of(converts)
    raise _Refused(f"{_what(path)} changes from {type_text(old)} to {type_text(new)}")


def _is_row(type_info: TypeInformation) -> bool:
    return type_info.name in ("ROW", "ROW_NAMED")


def _names(row_type: TypeInformation) -> list[str]:
    return list(row_type.field_names or (f"f{i}" for i in range(len(row_type.fields))))


def _what(path: str) -> str:
    if path == "{key}":
        return "the type of the map's keys"
    return f"field {path!r}" if path else "the value"


def _plan_row(
    old: TypeInformation,
    new: TypeInformation,
    path: str,
    defaults: dict[str, Any],
    changes: list[str],
) -> Convert:
    old_names, new_names = _names(old), _names(new)
    old_types = dict(zip(old_names, old.fields, strict=True))
    new_types = dict(zip(new_names, new.fields, strict=True))
    prefix = f"{path}." if path else ""
    for position, name in enumerate(new_names):
        if name in old_types or position >= len(old_names):
            continue
        gone = old_names[position]
        if gone not in new_types and old_types[gone] == new_types[name]:
            raise _Refused(
                f"field {prefix + gone!r} is gone and field {prefix + name!r} of the same type "
                "took its place, which reads as a rename; a rename would drop every stored "
                "value of the field, so it is refused (to add a field and drop another, add "
                "the new one at another place, or in a restore of its own)"
            )
    removed = [n for n in old_names if n not in new_types]
    changes.extend(f"field {prefix + n!r} removed" for n in removed)
    fills: dict[str, Any] = {}
    for name in new_names:
        if name not in old_types:
            fills[name] = _default(defaults, prefix + name, new_types[name])
            changes.append(f"field {prefix + name!r} added (default {fills[name]!r:.60})")
    kept = [n for n in old_names if n in new_types]
    if kept != [n for n in new_names if n in old_types]:
        changes.append(f"fields of {_what(path)} reordered")
    inner = {n: _plan(old_types[n], new_types[n], prefix + n, defaults, changes) for n in kept}
    return _row_migration(old_names, new_names, fills, inner)


def _default(defaults: dict[str, Any], path: str, type_info: TypeInformation | None) -> Any:
    value = defaults.get(path)
    if value is not None and type_info is not None:
        convert = value_converter(type_info)
        try:
            value = convert(value) if convert is not None else value
        except TypeError as e:
            raise _Refused(f"the default of field {path!r} is not of its type: {e}") from None
    return value


def _row_migration(
    old_names: list[str],
    new_names: list[str],
    fills: dict[str, Any],
    inner: dict[str, Convert | None],
) -> Convert:
    """A stored row (a Row, by its field names if it has them; a tuple or list, by the old
    field order; a dict, by name) -> a Row of the new fields, in the new order."""
    positions = {n: i for i, n in enumerate(old_names)}

    def migrate(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, dict):
            by_name = value
        else:
            names = value.get_field_names() if isinstance(value, Row) else None
            by_name = dict(zip(names or old_names, value, strict=False))
        values = []
        for name in new_names:
            if name in fills:
                values.append(fills[name])
                continue
            item = by_name.get(name) if name in by_name else _at(value, positions[name])
            convert = inner.get(name)
            values.append(item if convert is None else convert(item))
        row = Row(*values)
        row.set_field_names(new_names)
        if isinstance(value, Row):
            row.set_row_kind(value.get_row_kind())
        return row

    return migrate


def _at(value: Any, position: int) -> Any:
    try:
        return value[position]
    except (IndexError, TypeError, KeyError):
        return None


def _each(convert: Convert) -> Convert:
    return lambda values: None if values is None else [convert(v) for v in values]


def _each_value(convert: Convert) -> Convert:
    return lambda mapping: None if mapping is None else {k: convert(v) for k, v in mapping.items()}


def _tuple_of(converts: list[Convert | None]) -> Convert:
    def migrate(value: Any) -> Any:
        if value is None:
            return None
        return tuple(v if c is None else c(v) for c, v in zip(converts, value, strict=False))

    return migrate


# --- applying a migration to stored values -----------------------------------------------------


def migrate_element(element: Any, convert: Convert) -> Any:
    """One stored value of a value state, element of a list state or value of a map entry,
    stamped with its time where the state has a time to live."""
    if type(element) is TtlValue:
        return TtlValue(convert(element.value), element.written_ms)
    return convert(element)


def migrate_stored(kind: StateKind, stored: Any, convert: Convert) -> Any:
    """A key's whole stored state as the heap holds it: a value, a list, a dict."""
    if kind is StateKind.VALUE:
        return migrate_element(stored, convert)
    if kind is StateKind.LIST:
        return [migrate_element(e, convert) for e in stored]
    return {k: migrate_element(v, convert) for k, v in stored.items()}


# --- what a backend knows of its states' types ---------------------------------------------------


class StateSchemas:
    """The kinds and declared types of one backend's states: as its restore found them, then as
    the job declares them. A backend asks ``declare`` before it makes a state object, migrates
    the stored values if told to, and records ``types()`` in its snapshots. A state the job no
    longer declares keeps its recorded type, as its values do."""

    def __init__(self) -> None:
        self._kinds: dict[str, StateKind] = {}
        self._types: dict[str, str] = {}

    def restored(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        """What one restored handle records (every handle of a snapshot records the same)."""
        for name, kind in kinds.items():
            self._kinds.setdefault(name, StateKind(kind))
        for name, text in types.items():
            known = self._types.setdefault(name, text)
            if known != text:
                raise ValueError(
                    f"the snapshot being restored records state {name!r} as {known} in one "
                    f"subtask and as {text} in another; restore a snapshot of one job version"
                )

    def declare(self, descriptor: StateDescriptor) -> SchemaChange:
        """The change ``descriptor`` makes to its restored state, recorded unless it is
        refused (``IncompatibleStateError``); a state not restored is new, so unchanged."""
        name = descriptor.name
        old_kind = self._kinds.get(name)
        if old_kind is None:
            change = SchemaChange(name, Compatibility.UNCHANGED)
        else:
            change = compare(name, old_kind, self._types.get(name), descriptor)
        if change.compatibility is Compatibility.INCOMPATIBLE:
            raise IncompatibleStateError(change)
        self._kinds[name] = descriptor.kind
        text = declared_text(descriptor)
        if text is not None:
            self._types[name] = text
        return change

    def types(self) -> dict[str, str]:
        return dict(self._types)
