"""The state objects of the RocksDB backend: each reads and writes the rows of the current key in
its state's column family (row layout: ``key_codec.py``; values encoded by the state's declared
type: ``value_codec.py``).

**Threading:** the task thread only.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from rocksdict import Rdict, ReadOptions

from barrierflow.state.backend import KeyContext
from barrierflow.state.backends.rocksdb.key_codec import (
    CurrentKey,
    column_family,
    key_bytes,
    loads,
    successor,
)
from barrierflow.state.descriptors import StateKind
from barrierflow.state.value_codec import DECODE_AGAIN, ValueCodec, decode_value


class Table:
    """One declared state: its column family, and the handle write batches address it by.

    Only the backend holds tables: a column family handle keeps the database open.
    """

    __slots__ = ("db", "handle", "kind", "name")

    def __init__(self, name: str, kind: StateKind, db: Rdict, owner: Rdict) -> None:
        self.name = name
        self.kind = kind
        self.db = db
        self.handle = owner.get_column_family_handle(column_family(name, kind))


class RowState:
    """What every RocksDB state object holds: the column family's calls and the current key."""

    __slots__ = ("_current", "_db", "_decode", "_delete", "_encode", "_get", "_kc", "_put")

    def __init__(
        self, table: Table, kc: KeyContext, current: CurrentKey, codec: ValueCodec
    ) -> None:
        self._encode, self._decode = codec.encode, codec.decode
        self._kc = kc
        self._current = current
        self._db = table.db
        self._get = table.db.get
        self._put = table.db.put
        self._delete = table.db.delete

    def _prefix(self) -> bytes:
        """The current key's row prefix, serialized again only when the key changed."""
        key, current = self._kc.key, self._current
        return current.prefix if key == current.key else current.refresh(key)


class RocksDBValueState(RowState):
    """The per-record path: the prefix expression is inlined rather than a ``_prefix()`` call."""

    __slots__ = ()

    def value(self) -> Any:
        key, current = self._kc.key, self._current
        raw = self._get(current.prefix if key == current.key else current.refresh(key))
        if raw is None:
            return None
        try:  # inlined here and below: the per-record path
            return self._decode(raw)
        except DECODE_AGAIN:  # written while the state had another declared type
            return decode_value(raw)

    def update(self, value: Any) -> None:
        key, current = self._kc.key, self._current
        prefix = current.prefix if key == current.key else current.refresh(key)
        if value is None:
            self._delete(prefix)
        else:
            self._put(prefix, self._encode(value))

    def clear(self) -> None:
        key, current = self._kc.key, self._current
        self._delete(current.prefix if key == current.key else current.refresh(key))


class RocksDBListState(RowState):
    """The list of a key is one row (its encoded list).

    Trade-off: ``get()`` is one read, but ``add()`` is read-modify-write of the whole list,
    O(length) per element; Flink appends with a merge operator instead, which rocksdict does
    not expose for Python. Keep per-key lists short, or use MapState for long ones.
    """

    __slots__ = ()

    def get(self) -> list[Any]:
        raw = self._get(self._prefix())
        if raw is None:
            return []
        try:
            return self._decode(raw)
        except DECODE_AGAIN:
            return decode_value(raw)

    def add(self, value: Any) -> None:
        prefix = self._prefix()
        raw = self._get(prefix)
        if raw is None:
            values = []
        else:
            try:
                values = self._decode(raw)
            except DECODE_AGAIN:
                values = decode_value(raw)
        values.append(value)
        self._put(prefix, self._encode(values))

    def update(self, values: Iterable[Any]) -> None:
        values = list(values)
        if values:
            self._put(self._prefix(), self._encode(values))
        else:
            self.clear()

    def clear(self) -> None:
        self._delete(self._prefix())


class RocksDBMapState(RowState):
    """One row per map entry (the key's prefix and the pickled map key; the encoded value), so
    that get, put and remove of one entry touch only that entry; iteration is a range scan over
    the prefix.

    Entries iterate in the order of their pickled map keys, not in insertion order as in the
    heap backend (MapState promises no order). Iterators are over a copy, as in the heap backend:
    the map may be changed while iterating.
    """

    __slots__ = ()

    def _rows(self, prefix: bytes, limit: int | None = None) -> list[tuple[bytes, bytes]]:
        """The rows of the current key's map (at most ``limit``), read at once.

        rocksdict 0.3.29 keeps a pointer into the upper bound's bytes, not a copy: the bound
        (and its options) must outlive the iterator, so the rows are read in this frame.
        """
        bound = successor(prefix)
        options = ReadOptions()
        options.set_iterate_upper_bound(bound)
        rows = self._db.items(from_key=prefix, read_opt=options)
        found = list(rows) if limit is None else list(itertools.islice(rows, limit))
        del rows  # the iterator goes before the bound it points into
        return found  # type: ignore[return-value]  # rocksdict's stub: keys of any kind, not bytes

    def _entries(self) -> list[tuple[bytes, bytes]]:
        prefix = self._prefix()
        start = len(prefix)
        return [(k[start:], v) for k, v in self._rows(prefix)]

    def get(self, key: Any) -> Any:
        raw = self._db.get(self._prefix() + key_bytes(key))
        if raw is None:
            return None
        try:
            return self._decode(raw)
        except DECODE_AGAIN:
            return decode_value(raw)

    def put(self, key: Any, value: Any) -> None:
        self._db.put(self._prefix() + key_bytes(key), self._encode(value))

    def put_all(self, mapping: dict) -> None:
        prefix, put = self._prefix(), self._db.put
        for key, value in mapping.items():
            put(prefix + key_bytes(key), self._encode(value))

    def remove(self, key: Any) -> None:
        self._db.delete(self._prefix() + key_bytes(key))

    def contains(self, key: Any) -> bool:
        return self._db.get(self._prefix() + key_bytes(key)) is not None

    def _decoded(self, rows: list[tuple[bytes, bytes]]) -> list[Any]:
        try:
            return [self._decode(v) for _, v in rows]
        except DECODE_AGAIN:
            return [decode_value(v) for _, v in rows]

    def items(self) -> Iterator[tuple[Any, Any]]:
        rows = self._entries()
        return iter(list(zip([loads(k) for k, _ in rows], self._decoded(rows), strict=True)))

    def keys(self) -> Iterator[Any]:
        return iter([loads(k) for k, _ in self._entries()])

    def values(self) -> Iterator[Any]:
        return iter(self._decoded(self._entries()))

    def is_empty(self) -> bool:
        return not self._rows(self._prefix(), limit=1)

    def clear(self) -> None:
        # Point deletes, not DeleteRange: many small range tombstones slow every later read.
        # (No WriteBatch: it needs a column family handle, and a handle keeps the database
        # open after dispose() as long as the state object lives.)
        delete = self._db.delete
        for row, _ in self._rows(self._prefix()):
            delete(row)
