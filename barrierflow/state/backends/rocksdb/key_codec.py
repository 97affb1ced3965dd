"""How keyed state is laid out in RocksDB: row keys, column family names, and the decoding of
rows back into the key-group format's sections.

One column family per declared state, named ``<kind>/<state name>`` so that the database itself
says what each family holds. A row's key is, with K the pickled user key::

    key group (u16, big endian) | len(K) (u32, big endian) | K [| pickled map key]

The key group comes first so that a key-group range is one contiguous range of rows in every
column family; the user key is length-prefixed so that the entries of one key's map are exactly
the rows that start with that key's prefix (a range scan). Values are encoded by the state's
declared type, or pickled (``state/value_codec.py``); each says which.

Keys must compare in bytes as they compare in Python: the heap backend's dicts treat ``1``,
``1.0`` and ``True`` as one key (and ``stable_hash`` puts them in one key group), but their
pickles differ, and pickle memoizes by object identity, so ``("a", s)`` pickles differently when
``s`` is or is not the very same object as ``"a"``. Keys are therefore canonicalized
(``canonical``) and tuples pickled without the memo (``key_bytes``); a snapshot returns the
canonical form (``1`` for ``True``), which is equal to the original.

Performs no I/O.
"""

from __future__ import annotations

import functools
import io
import itertools
import numbers
import pickle
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from barrierflow.checkpoint.key_group_format import Section
from barrierflow.state.descriptors import StateKind
from barrierflow.state.value_codec import decode_value

PROTOCOL = 5
HEADER_BYTES = 6  # key group (2 bytes) + length of the pickled user key (4 bytes)
UNSET = object()

dumps = pickle.dumps
loads = pickle.loads

# A cursor over one state's rows: (state name, kind, iterator of (row key, value) in key order).
Cursor = tuple[str, StateKind, Iterator[tuple[bytes, bytes]]]


def column_family(name: str, kind: StateKind) -> str:
    return f"{kind.value}/{name}"


def canonical(key: Any) -> Any:
    """One representative of the keys equal to ``key``, so that equal keys give equal bytes.

    Mirrors ``stable_hash``: numbers that equal an int become that int, other numbers that equal
    a float become that float, str/bytes/tuple subclasses become the plain type. Other types
    (possible as map keys only) are returned unchanged and compared by their pickled bytes.
    """
    kind = type(key)
    if kind is int or kind is str or kind is bytes or key is None:
        return key
    if kind is float:
        return int(key) if key.is_integer() else key
    if kind is bool:
        return int(key)
    if isinstance(key, tuple):
        return tuple(canonical(item) for item in key)
    if isinstance(key, str):
        return str(key)
    if isinstance(key, bytes):
        return bytes(key)
    if isinstance(key, numbers.Number) and not isinstance(key, complex):
        number: Any = key  # ``Number`` declares neither conversion; its kinds here have both
        try:
            if number == int(number):
                return int(number)
            if number == float(number):
                return canonical(float(number))
        except (TypeError, ValueError, OverflowError):
            pass
    return key


_MEMO_FREE = frozenset({int, str, bytes, float, type(None)})  # a pickle of one such has no memo


def key_bytes(key: Any) -> bytes:
    """The deterministic pickle of a user or map key (see the module docstring for why)."""
    key = canonical(key)
    if type(key) in _MEMO_FREE:
        return dumps(key, PROTOCOL)
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, PROTOCOL)
    pickler.fast = True  # no memo: equal objects pickle alike whether or not they are identical
    pickler.dump(key)
    return buffer.getvalue()


_pack_header = struct.Struct(">HI").pack  # key group, length of the pickled user key


def successor(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string that starts with ``prefix``.

    Never empty: a prefix starts with a key group below 32768, so its first byte is below 0xff.
    """
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes((stripped[-1] + 1,))


class CurrentKey:
    """The row-key prefix of ``key_context.key``, computed once per key change.

    The operator sets the key once per record and then calls its state objects, often more than
    once; hashing and pickling the key would otherwise be most of the cost of a state access.
    The cache compares keys with ``==``, which is sound because equal keys have equal prefixes.
    """

    __slots__ = ("_key_group_of", "key", "prefix")

    def __init__(self, key_group_of: Callable[[Any], int]) -> None:
        self._key_group_of = key_group_of
        self.key: Any = UNSET
        self.prefix = b""

    def refresh(self, key: Any) -> bytes:
        kind = type(key)
        user_key = dumps(key, PROTOCOL) if kind is int or kind is str else key_bytes(key)
        prefix = _pack_header(self._key_group_of(key), len(user_key)) + user_key
        self.key, self.prefix = key, prefix
        return prefix


def rows_of_entries(kind: StateKind, key_group: int, entries: list[tuple[Any, Any]]) -> dict:
    """The rows (row key -> pickled value) of one state's entries of one key group in the
    key-group format: a section's ``[(key, value), ...]``, map values being dicts.

    A dict, so that rows whose keys come out equal keep the last one, as puts would. No value,
    ``None`` or ``[]``, writes no row (the heap never holds them).
    """
    if kind is not StateKind.MAP and entries:
        keys, values = zip(*entries, strict=True)
        if _PLAIN_TYPES.issuperset(map(type, keys)) and (
            None not in values if kind is StateKind.VALUE else all(values)
        ):
            return _plain_rows(key_group, keys, values)
    pack = _pack_header
    rows: dict[bytes, bytes] = {}
    for key, value in entries:
        user_key = key_bytes(key)
        prefix = pack(key_group, len(user_key)) + user_key
        if kind is StateKind.MAP:
            for map_key, map_value in value.items():
                rows[prefix + key_bytes(map_key)] = dumps(map_value, PROTOCOL)
        elif value is not None if kind is StateKind.VALUE else len(value) > 0:
            rows[prefix] = dumps(value, PROTOCOL)
    return rows


# Their own canonical form, pickled without a memo: key_bytes's work is for the other types.
_PLAIN_TYPES = frozenset({int, str})
_dumps_row = functools.partial(dumps, protocol=PROTOCOL)


def _plain_rows(key_group: int, keys: tuple, values: tuple) -> dict[bytes, bytes]:
    """The common case of a restore's per-key path (int or str keys, a value or a list each),
    in C loops (``map``) rather than a Python loop: most of the restore's time otherwise."""
    user_keys = list(map(_dumps_row, keys))
    headers = map(_pack_header, itertools.repeat(key_group), map(len, user_keys))
    return dict(zip(map(bytes.__add__, headers, user_keys), _encoded_values(values), strict=True))


def _encoded_values(values: tuple) -> Iterable[bytes]:
    """Pickled ``values``; each distinct one once when they repeat (counts, flags), which a
    sample tells. Only when all are of one type among int and str: equal values of other
    types (``1``, ``1.0``, ``True``) pickle differently, and a set would merge them."""
    if type(values[0]) in _PLAIN_TYPES and len(set(map(type, values))) == 1:
        sample = values[:_SAMPLE]
        if len(set(sample)) * 4 <= len(sample):
            encoded = {value: _dumps_row(value) for value in set(values)}
            return map(encoded.__getitem__, values)
    return map(_dumps_row, values)


_SAMPLE = 256


def sections_of_rows(
    cursors: list[Cursor], check: Callable[[], None] = lambda: None
) -> Iterator[tuple[int, Section]]:
    """The key-group format's sections, in key-group order: every column family is sorted by key
    group, so one pass over each, in step, yields one key group at a time. ``check`` runs before
    each key group (to stop a scan whose backend was disposed)."""
    heads: list[tuple[bytes, bytes] | None] = [next(c[2], None) for c in cursors]
    while True:
        pending = [head[0][:2] for head in heads if head is not None]
        if not pending:
            return
        check()
        kg_bytes = min(pending)
        section: Section = {}
        for i in range(len(cursors)):
            rows = []
            head = heads[i]
            while head is not None and head[0][:2] == kg_bytes:
                rows.append(head)
                head = next(cursors[i][2], None)
            heads[i] = head
            if rows:
                name, kind = cursors[i][0], cursors[i][1]
                section[name] = (kind.value, _decode(kind, rows))
        yield int.from_bytes(kg_bytes, "big"), section


def _decode(kind: StateKind, rows: list[tuple[bytes, bytes]]) -> list[tuple[Any, Any]]:
    """Rows of one key group of one state -> the section's ``[(key, value), ...]``."""
    if kind is not StateKind.MAP:
        return [(loads(k[HEADER_BYTES:]), decode_value(v)) for k, v in rows]
    entries: list[tuple[Any, Any]] = []
    mapping: dict[Any, Any] = {}
    last = b""
    for k, v in rows:
        end = HEADER_BYTES + int.from_bytes(k[2:HEADER_BYTES], "big")
        if k[:end] != last:
            last = k[:end]
            mapping = {}
            entries.append((loads(k[HEADER_BYTES:end]), mapping))
        mapping[loads(k[end:])] = decode_value(v)
    return entries
