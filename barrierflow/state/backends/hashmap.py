"""The ``hashmap`` keyed state backend: state in Python dicts, full snapshots per key group.

Snapshots are copy-on-write: the synchronous phase copies each state table (a shallow dict
copy) and bumps the backend's version; list and map values created before that version are
copied before their first mutation, so the asynchronous phase reads a frozen view.

Checkpoints write each state's table whole (the key-group format's version 3,
``checkpoint/key_group_tables.py``: one pickle per state, with the key group of each key), so
that the asynchronous phase costs little more than a pickle of the tables
(docs/adr/0022-heap-snapshots-as-whole-tables.md). Savepoints are in the canonical key-group
format (``checkpoint/key_group_format.py``), sections per key group. A restore reads both, and
keeps only the keys of its own key groups.

Restores from incremental RocksDB checkpoints too, by reading their databases row by row.

**Threading:** task thread, except the returned ``AsyncSnapshot`` (background, frozen data).
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from barrierflow.checkpoint.key_group_format import Section, read_key_groups, write_key_groups
from barrierflow.checkpoint.key_group_tables import (
    TABLES_FORMAT_VERSION,
    Tables,
    read_key_group_tables,
    write_key_group_tables,
)
from barrierflow.checkpoint.metadata import (
    IncrementalKeyedHandle,
    KeyedStateHandle,
    KeyGroupsHandle,
)
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, CheckpointOptions, SnapshotFormat
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import (
    AsyncSnapshot,
    KeyContext,
    RestoreStreams,
    SnapshotStreams,
    check_state_kind,
)
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.key_groups import KeyGroupCache
from barrierflow.state.schema_evolution import Convert, StateSchemas, migrate_stored

BACKEND_NAME = "hashmap"  # what snapshots record as their writer: registry.py's name of it


class _VersionedList(list):
    __slots__ = ("version",)

    version: int


class _VersionedDict(dict):
    __slots__ = ("version",)

    version: int


class _Table:
    __slots__ = ("data", "kind")

    def __init__(self, kind: StateKind) -> None:
        self.kind = kind
        self.data: dict[Any, Any] = {}


class HeapValueState:
    __slots__ = ("_data", "_kc")

    def __init__(self, table: _Table, kc: KeyContext) -> None:
        self._data = table.data
        self._kc = kc

    def value(self) -> Any:
        return self._data.get(self._kc.key)

    def update(self, value: Any) -> None:
        if value is None:
            self._data.pop(self._kc.key, None)
        else:
            self._data[self._kc.key] = value

    def clear(self) -> None:
        self._data.pop(self._kc.key, None)

    def direct_store(self) -> tuple[dict[Any, Any], KeyContext]:
        """The dict this state writes into and the key context naming the entry, so that a
        typed state's check can write a checked value itself, in the same call
        (``typed_state.py``): a write is on the per-record path."""
        return self._data, self._kc


class HeapListState:
    __slots__ = ("_backend", "_data", "_kc")

    def __init__(self, table: _Table, kc: KeyContext, backend: HeapKeyedStateBackend) -> None:
        self._data = table.data
        self._kc = kc
        self._backend = backend

    def get(self) -> list[Any]:
        return list(self._data.get(self._kc.key, ()))

    def add(self, value: Any) -> None:
        current = self._data.get(self._kc.key)
        if current is None or current.version != self._backend.version:
            current = self._fresh(current or ())
        current.append(value)

    def update(self, values: Iterable[Any]) -> None:
        values = list(values)
        if values:
            self._fresh(values)
        else:
            self.clear()

    def clear(self) -> None:
        self._data.pop(self._kc.key, None)

    def _fresh(self, values: Iterable[Any]) -> _VersionedList:
        fresh = _VersionedList(values)
        fresh.version = self._backend.version
        self._data[self._kc.key] = fresh
        return fresh


class HeapMapState:
    __slots__ = ("_backend", "_data", "_kc")

    def __init__(self, table: _Table, kc: KeyContext, backend: HeapKeyedStateBackend) -> None:
        self._data = table.data
        self._kc = kc
        self._backend = backend

    def _current(self) -> dict:
        return self._data.get(self._kc.key) or {}

    def _writable(self) -> _VersionedDict:
        current = self._data.get(self._kc.key)
        if current is None or current.version != self._backend.version:
            current = _VersionedDict(current or {})
            current.version = self._backend.version
            self._data[self._kc.key] = current
        return current

    def get(self, key: Any) -> Any:
        return self._current().get(key)

    def put(self, key: Any, value: Any) -> None:
        self._writable()[key] = value

    def put_all(self, mapping: dict) -> None:
        self._writable().update(mapping)

    def remove(self, key: Any) -> None:
        if key in self._current():
            writable = self._writable()
            del writable[key]
            if not writable:
                self.clear()

    def contains(self, key: Any) -> bool:
        return key in self._current()

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._current().items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self._current()))

    def values(self) -> Iterator[Any]:
        return iter(list(self._current().values()))

    def is_empty(self) -> bool:
        return not self._current()

    def clear(self) -> None:
        self._data.pop(self._kc.key, None)


class HeapKeyedStateBackend:
    """Keyed state of one operator subtask, for the key groups in ``key_group_range``."""

    def __init__(self, max_parallelism: int, key_group_range: KeyGroupRange) -> None:
        self.key_context = KeyContext()
        self.version = 0
        self._range = key_group_range
        self._key_groups = KeyGroupCache(max_parallelism)
        self._tables: dict[str, _Table] = {}
        self._states: dict[str, Any] = {}
        self._schemas = StateSchemas()

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The first request of a restored state migrates its values to the declared type
        (``state/schema_evolution.py``), or refuses a change they cannot take."""
        state = self._states.get(descriptor.name)
        table = self._tables.get(descriptor.name)
        if state is None:
            change = self._schemas.declare(descriptor)
            if table is not None and change.convert is not None:
                self._migrate(table, change.convert)
        if table is not None:
            check_state_kind(descriptor, table.kind)
        if state is not None:
            return state
        if table is None:
            table = self._tables[descriptor.name] = _Table(descriptor.kind)
        if descriptor.kind is StateKind.VALUE:
            state = HeapValueState(table, self.key_context)
        elif descriptor.kind is StateKind.LIST:
            state = HeapListState(table, self.key_context, self)
        else:
            state = HeapMapState(table, self.key_context, self)
        self._states[descriptor.name] = state
        return state

    def _migrate(self, table: _Table, convert: Convert) -> None:
        """Every stored value, through ``convert``, into a fresh table (a running snapshot keeps
        reading the old one); before any state object holds the table's dict."""
        kind, data = table.kind, table.data
        migrated = ((key, migrate_stored(kind, _plain(v), convert)) for key, v in data.items())
        table.data = dict(self._revive(kind, list(migrated)))

    def snapshot(
        self, checkpoint_id: int = 0, options: CheckpointOptions = CHECKPOINT
    ) -> AsyncSnapshot:
        """Freezes the tables by a shallow copy each (C speed, a few ns per key; list and map
        values are copied on their next write, by version). Checkpoints write the tables whole;
        savepoints, and snapshots asked for the canonical format, per key group."""
        frozen = {name: (t.kind, dict(t.data)) for name, t in self._tables.items() if t.data}
        self.version += 1
        key_groups = self._key_groups.key_groups
        kg_range = self._range
        types = self._schemas.types()
        if options.is_savepoint or options.snapshot_format is SnapshotFormat.CANONICAL:
            return _canonical_snapshot(frozen, key_groups, kg_range, types)

        def write(streams: SnapshotStreams) -> list[KeyGroupsHandle]:
            tables: Tables = {
                name: (kind.value, key_groups(data), _plain_table(kind, data))
                for name, (kind, data) in frozen.items()
            }
            return write_key_group_tables(tables, kg_range, streams.write, BACKEND_NAME, types)

        return write

    def restore(self, handles: list[KeyedStateHandle], streams: RestoreStreams) -> None:
        for handle in handles:
            self._schemas.restored(handle.states, handle.types)
            if isinstance(handle, IncrementalKeyedHandle):
                # RocksDB's own files: only RocksDB reads them, in a scratch directory.
                from barrierflow.state.backends.rocksdb.incremental_restore import (
                    incremental_sections,
                )

                with tempfile.TemporaryDirectory(prefix="barrierflow-restore-") as scratch:
                    scratch_db = os.path.join(scratch, "db")
                    for _kg, section in incremental_sections(
                        handle, streams, self._range, scratch_db
                    ):
                        self._restore_section(section)
            elif handle.format_version == TABLES_FORMAT_VERSION:
                for name, kind_value, entries in read_key_group_tables(
                    handle, self._range, streams.read
                ):
                    self._restore_entries(name, kind_value, entries)
            else:
                for _kg, section in read_key_groups(handle, self._range, streams.read):
                    self._restore_section(section)

    def _restore_section(self, section: Section) -> None:
        for name, (kind_value, entries) in section.items():
            self._restore_entries(name, kind_value, entries)

    def _restore_entries(
        self, name: str, kind_value: str, entries: dict[Any, Any] | list[tuple[Any, Any]]
    ) -> None:
        kind = StateKind(kind_value)
        table = self._tables.setdefault(name, _Table(kind))
        adopt = not table.data and name not in self._states
        if kind is StateKind.VALUE and adopt and isinstance(entries, dict):
            table.data = entries  # a table read whole, and no state object holds the empty one
        elif kind is StateKind.VALUE:
            table.data.update(entries)
        else:
            pairs = entries.items() if isinstance(entries, dict) else entries
            table.data.update(self._revive(kind, pairs))

    def _revive(self, kind: StateKind, entries: Iterable) -> Iterator[tuple[Any, Any]]:
        if kind is StateKind.VALUE:
            yield from entries
            return
        container = _VersionedList if kind is StateKind.LIST else _VersionedDict
        for key, value in entries:
            revived = container(value)
            revived.version = self.version
            yield key, revived

    def state_names(self) -> list[str]:
        return list(self._tables)

    def put_table(self, name: str, data: dict[Any, Any]) -> None:
        """Makes ``data`` (key -> value, in its order) value state ``name``'s table, by
        reference, for the next ``snapshot()`` to copy whole: for an operator that keeps values
        in a dict of its own between snapshots (the window operator's batch path,
        ``runtime/window_state.py``) and would otherwise copy them one ``update`` at a time.
        ``drop_table`` takes it back once the snapshot is taken."""
        if name in self._states:
            raise ValueError(f"state {name!r} is in use; a table cannot replace its values")
        table = self._tables[name] = _Table(StateKind.VALUE)
        table.data = data

    def drop_table(self, name: str) -> None:
        """Forgets state ``name`` and its values (a snapshot already taken keeps its copy)."""
        if name in self._states:
            raise ValueError(f"state {name!r} is in use; its table cannot be dropped")
        self._tables.pop(name, None)

    def entries(self, name: str) -> Iterator[tuple[Any, Any]]:
        table = self._tables.get(name)
        if table is not None:
            for key, value in list(table.data.items()):
                yield key, _plain(value)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass  # every snapshot is self-contained

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        pass

    def dispose(self) -> None:
        self._tables.clear()
        self._states.clear()


def _plain(value: Any) -> Any:
    if isinstance(value, _VersionedList):
        return list(value)
    if isinstance(value, _VersionedDict):
        return dict(value)
    return value


def _plain_table(kind: StateKind, data: dict[Any, Any]) -> dict[Any, Any]:
    """The table as the user's values: list and map values lose their version."""
    if kind is StateKind.VALUE:
        return data
    plain = list if kind is StateKind.LIST else dict
    return {key: plain(value) for key, value in data.items()}


def _canonical_snapshot(
    frozen: dict[str, tuple[StateKind, dict[Any, Any]]],
    key_groups: Callable[[Iterable[Any]], list[int]],
    kg_range: KeyGroupRange,
    types: dict[str, str],
) -> AsyncSnapshot:
    """The asynchronous phase of a snapshot in the canonical key-group format."""

    def write(streams: SnapshotStreams) -> list[KeyGroupsHandle]:
        sections: dict[int, Section] = defaultdict(dict)
        for name, (kind, data) in frozen.items():
            by_key_group: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
            for kg, item in zip(key_groups(data), _plain_table(kind, data).items(), strict=True):
                by_key_group[kg].append(item)
            for kg, entries in by_key_group.items():
                sections[kg][name] = (kind.value, entries)
        in_order = ((kg, sections[kg]) for kg in sorted(sections))
        return write_key_groups(in_order, kg_range, streams.write, BACKEND_NAME, types)

    return write
