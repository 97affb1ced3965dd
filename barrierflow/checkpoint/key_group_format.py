"""The key-group format: the keyed state of a key-group range as one stream of sections, one per
key group. Both keyed state backends write it for full snapshots and read it on restore,
whichever backend wrote it; it is the canonical format of savepoints. Byte layout, versioning
and checksums: docs/formats.md.

A section is ``{state name: (state kind, [(key, value), ...])}`` (for map state the value is a
dict), pickled with protocol 5; the stream is the sections of the non-empty key groups in
key-group order. The ``KeyGroupsHandle`` records ``(key group, offset, length)`` for each, so a
restore reads only the sections of its own key groups. Values are pickled as everywhere in
barrierflow's state (docs/adr/0002-record-and-state-serialization.md).

Nothing is unpickled before a checksum matched: a whole stream's (in its handle, checked by
``checkpoint/storage.py`` as it is read), or, since version 2, the section's own, which
precedes it, so that a reader may fetch the byte ranges of its key groups alone (the state
processor's tasks). Version 1 streams have no section checksums: they are read whole.

Version 3 (``key_group_tables.py``) holds whole tables instead of sections, for the heap
backend's checkpoints; ``read_key_groups`` regroups it into sections, so every reader of
sections reads it too.

Performs no I/O: streams are written and read through the callables the caller passes.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from barrierflow.checkpoint.key_group_tables import (
    TABLES_FORMAT_VERSION,
    Section,
    key_group_sections,
    where,
)
from barrierflow.checkpoint.metadata import KeyGroupsHandle, StreamHandle
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.key_group_range import KeyGroupRange

KEY_GROUP_FORMAT_VERSION = 2  # 2: each section is preceded by its BLAKE2b-128 digest
_READABLE_VERSIONS = (1, 2, TABLES_FORMAT_VERSION)  # 3: checkpoints of the heap backend
_PROTOCOL = 5
_DIGEST_BYTES = 16

ReadRange = Callable[[StreamHandle, int, int], bytes]  # (stream, offset, length) -> those bytes


def _digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST_BYTES).digest()


@dataclass(frozen=True)
class EncodedKeyGroups:
    """The stream of some key groups' sections, not yet written."""

    key_group_range: KeyGroupRange
    data: bytes
    offsets: list[tuple[int, int, int]]  # (key group, offset, length)
    states: dict[str, str]  # state name -> kind, of every section

    def write(
        self,
        write: Callable[[bytes, str], StreamHandle],
        backend: str = "",
        types: dict[str, str] | None = None,
    ) -> list[KeyGroupsHandle]:
        """Writes the stream with ``write(data, "keyed")``; no handle when there is no section.
        ``backend`` names the backend that wrote it; ``types``: the declared type of each
        state (``state/state_schema.py``), of which those of its states are recorded."""
        if not self.offsets:
            return []
        kg_range = self.key_group_range
        stream = write(self.data, "keyed")
        types = {n: t for n, t in (types or {}).items() if n in self.states}
        return [
            KeyGroupsHandle(
                kg_range.start,
                kg_range.end,
                self.offsets,
                stream,
                format_version=KEY_GROUP_FORMAT_VERSION,
                states=self.states,
                types=types,
                backend=backend,
            )
        ]


def encode_key_groups(
    sections: Iterable[tuple[int, Section]], key_group_range: KeyGroupRange
) -> EncodedKeyGroups:
    """``sections``: in increasing key-group order, within ``key_group_range``, empty ones left
    out."""
    chunks: list[bytes] = []
    offsets: list[tuple[int, int, int]] = []
    states: dict[str, str] = {}
    position = 0
    previous = -1
    for key_group, section in sections:
        if key_group <= previous or key_group not in key_group_range:
            raise ValueError(
                f"section of key group {key_group} out of order or outside {key_group_range}"
            )
        previous = key_group
        states.update((name, kind) for name, (kind, _) in section.items())
        body = pickle.dumps(section, protocol=_PROTOCOL)
        chunks += (_digest(body), body)
        length = _DIGEST_BYTES + len(body)
        offsets.append((key_group, position, length))
        position += length
    return EncodedKeyGroups(key_group_range, b"".join(chunks), offsets, states)


def write_key_groups(
    sections: Iterable[tuple[int, Section]],
    key_group_range: KeyGroupRange,
    write: Callable[[bytes, str], StreamHandle],
    backend: str = "",
    types: dict[str, str] | None = None,
) -> list[KeyGroupsHandle]:
    return encode_key_groups(sections, key_group_range).write(write, backend, types)


def read_key_groups(
    handle: KeyGroupsHandle,
    key_group_range: KeyGroupRange,
    read: Callable[[StreamHandle], bytes],
) -> Iterator[tuple[int, Section]]:
    """The sections of ``handle`` whose key group is in ``key_group_range``, in key-group
    order; the stream is read whole (``read(handle.stream)``, which checks its checksum) only
    if one of them is wanted."""
    _check_version(handle)
    if handle.format_version == TABLES_FORMAT_VERSION:
        yield from key_group_sections(handle, key_group_range, read)
        return
    wanted = [o for o in handle.offsets if o[0] in key_group_range]
    if not wanted:
        return
    data = read(handle.stream)
    for key_group, offset, length in wanted:
        if offset < 0 or offset + length > len(data):
            raise CorruptCheckpointError(
                where(handle),
                f"section of key group {key_group} at {offset}+{length} is outside the "
                f"{len(data)} bytes of the stream",
            )
        body = data[offset : offset + length]
        if handle.format_version >= 2:
            body = body[_DIGEST_BYTES:]  # the stream's checksum covered it
        yield key_group, pickle.loads(body)


def read_key_group_ranges(
    handle: KeyGroupsHandle,
    key_group_range: KeyGroupRange,
    read: Callable[[StreamHandle], bytes],
    read_range: ReadRange,
) -> Iterator[tuple[int, Section]]:
    """As ``read_key_groups``, reading only the bytes of the wanted sections (one range: they
    are contiguous), each checked against its own digest before it is unpickled. Streams of
    versions 1 and 3 have no such digests, so they are read whole."""
    if handle.format_version != 2:
        yield from read_key_groups(handle, key_group_range, read)
        return
    _check_version(handle)
    wanted = [o for o in handle.offsets if o[0] in key_group_range]
    if not wanted:
        return
    start = wanted[0][1]
    end = wanted[-1][1] + wanted[-1][2]
    if start < 0 or end < start:
        raise CorruptCheckpointError(where(handle), f"sections at {start}..{end} are malformed")
    data = memoryview(read_range(handle.stream, start, end - start))
    for key_group, offset, length in wanted:
        at = offset - start
        if at < 0 or at + length > len(data) or length < _DIGEST_BYTES:
            raise CorruptCheckpointError(
                where(handle),
                f"section of key group {key_group} at {offset}+{length} is outside the "
                f"{len(data)} bytes read at {start}",
            )
        digest, body = data[at : at + _DIGEST_BYTES], data[at + _DIGEST_BYTES : at + length]
        if _digest(body) != digest:
            raise CorruptCheckpointError(
                where(handle),
                f"checksum mismatch in the section of key group {key_group}: the file was "
                "corrupted",
            )
        yield key_group, pickle.loads(body)


def _check_version(handle: KeyGroupsHandle) -> None:
    if handle.format_version not in _READABLE_VERSIONS:
        raise CorruptCheckpointError(
            where(handle),
            f"key-group format version {handle.format_version} is not one this barrierflow "
            f"reads ({', '.join(map(str, _READABLE_VERSIONS))}); upgrade barrierflow",
        )
