"""Version 3 of the key-group format: the heap backend's state tables whole, one pickle per
state, with the key group of each key beside it. Byte layout: docs/formats.md; why:
docs/adr/0022-heap-snapshots-as-whole-tables.md.

Version 2 writes a list of ``(key, value)`` pairs per key group; grouping the keys and
pickling a tuple per entry cost the heap backend's checkpoints ~1 µs per key on its background
thread, under the GIL of a busy slot. A table pickled whole costs ~20 ns per key. The price is
paid by the readers that want sections per key group (RocksDB restoring a heap checkpoint, the
state processor, rescaling): they regroup the keys as they read, from the recorded key groups,
without hashing a key. A stream of this version is always read whole: the stream's checksum
(its ``FileHandle``'s, or the metadata's for an inline stream) covers it before it is
unpickled.

Only checkpoints are written in it; savepoints stay in version 2, the canonical layout.

Performs no I/O: streams are written and read through the callables the caller passes.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from barrierflow.checkpoint.metadata import KeyGroupsHandle, StreamHandle
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.key_group_range import KeyGroupRange

TABLES_FORMAT_VERSION = 3
_PROTOCOL = 5

# state name -> (state kind value, the key group of each key in the table's order, table)
Tables = dict[str, tuple[str, Sequence[int], dict[Any, Any]]]
Section = dict[str, tuple[str, list[tuple[Any, Any]]]]  # state name -> (kind value, entries)


def write_key_group_tables(
    tables: Tables,
    key_group_range: KeyGroupRange,
    write: Callable[[bytes, str], StreamHandle],
    backend: str = "",
    types: dict[str, str] | None = None,
) -> list[KeyGroupsHandle]:
    """Writes ``tables`` (empty ones left out) as one stream with ``write(data, "keyed")``; no
    handle when every table is empty. The handle's ``offsets`` name each key group that has a
    key, every entry covering the whole stream (this version has no sections to seek)."""
    body: dict[str, tuple[str, Sequence[int], dict[Any, Any]]] = {}
    present: set[int] = set()
    for name, (kind, key_groups, table) in tables.items():
        if not table:
            continue
        if len(key_groups) != len(table):
            raise ValueError(f"state {name!r}: {len(key_groups)} key groups for {len(table)} keys")
        present.update(key_groups)
        body[name] = (kind, key_groups, table)
    if not body:
        return []
    outside = [kg for kg in present if kg not in key_group_range]
    if outside:
        raise ValueError(f"key groups {sorted(outside)[:5]} are outside {key_group_range}")
    data = pickle.dumps(body, protocol=_PROTOCOL)
    stream = write(data, "keyed")
    types = {n: t for n, t in (types or {}).items() if n in body}
    return [
        KeyGroupsHandle(
            key_group_range.start,
            key_group_range.end,
            [(kg, 0, len(data)) for kg in sorted(present)],
            stream,
            format_version=TABLES_FORMAT_VERSION,
            states={name: kind for name, (kind, _, _) in body.items()},
            types=types,
            backend=backend,
        )
    ]


def read_key_group_tables(
    handle: KeyGroupsHandle,
    key_group_range: KeyGroupRange,
    read: Callable[[StreamHandle], bytes],
) -> Iterator[tuple[str, str, dict[Any, Any]]]:
    """``(state name, kind value, table)`` of a version 3 ``handle``, each table holding only
    the keys of ``key_group_range``: the stream's own tables when the range covers the handle's,
    else filtered by their recorded key groups. The stream is read only if the range wants some
    of its key groups."""
    covers = (
        key_group_range.start <= handle.key_group_start
        and handle.key_group_end <= key_group_range.end
    )
    if not _wanted(handle, key_group_range):
        return
    for name, (kind, key_groups, table) in _decode(handle, read).items():
        if not covers:
            start, end = key_group_range.start, key_group_range.end
            table = {
                key: value
                for (key, value), kg in zip(table.items(), key_groups, strict=True)
                if start <= kg <= end
            }
        if table:
            yield name, kind, table


def key_group_sections(
    handle: KeyGroupsHandle,
    key_group_range: KeyGroupRange,
    read: Callable[[StreamHandle], bytes],
) -> Iterator[tuple[int, Section]]:
    """The stream regrouped into version 2's sections (in key-group order, each key in its
    recorded key group), for readers that take sections: ``key_group_format.read_key_groups``."""
    if not _wanted(handle, key_group_range):
        return
    sections: dict[int, Section] = {}
    start, end = key_group_range.start, key_group_range.end
    for name, (kind, key_groups, table) in _decode(handle, read).items():
        for kg, item in zip(key_groups, table.items(), strict=True):
            if start <= kg <= end:
                section = sections.setdefault(kg, {})
                section.setdefault(name, (kind, []))[1].append(item)
    for kg in sorted(sections):
        yield kg, sections[kg]


def _wanted(handle: KeyGroupsHandle, key_group_range: KeyGroupRange) -> bool:
    return any(kg in key_group_range for kg, _, _ in handle.offsets)


def _decode(
    handle: KeyGroupsHandle, read: Callable[[StreamHandle], bytes]
) -> dict[str, tuple[str, list[int], dict[Any, Any]]]:
    """The stream's tables, each with one key group per key."""
    body = pickle.loads(read(handle.stream))  # read() checked the stream's checksum
    if not isinstance(body, dict):
        raise CorruptCheckpointError(
            where(handle), f"a version 3 stream holds a {type(body).__name__}, not its tables"
        )
    for name, (_, key_groups, table) in body.items():
        if len(key_groups) != len(table):
            raise CorruptCheckpointError(
                where(handle),
                f"state {name!r} has {len(table)} keys and {len(key_groups)} key groups",
            )
    return body


def where(handle: KeyGroupsHandle) -> str:
    """The stream of ``handle``, for error messages."""
    path = getattr(handle.stream, "path", None)
    return (
        path or f"inline keyed state of key groups {handle.key_group_start}-{handle.key_group_end}"
    )
