"""The key-group format: the keyed state of a key-group range as one stream of sections, one per
key group. Both keyed state backends write it for full snapshots and read it on restore,
whichever backend wrote it; it is the canonical format of savepoints. Byte layout, versioning
and checksums: docs/formats.md.

A section is ``{state name: (state kind, [(key, value), ...])}`` (for map state the value is a
dict), pickled with protocol 5; the stream is the sections of the non-empty key groups in
key-group order. The ``KeyGroupsHandle`` records ``(key group, offset, length)`` for each, so a
restore reads only the sections of its own key groups. Values are pickled as everywhere in
barrierflow's state (docs/adr/0002-record-and-state-serialization.md): a stream is read only
after its size and BLAKE2b checksum matched the handle's (``checkpoint/storage.py``).

Performs no I/O: streams are written and read through the callables the backend passes.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from barrierflow.checkpoint.metadata import KeyGroupsHandle, StreamHandle
from barrierflow.errors import CorruptCheckpointError

if TYPE_CHECKING:  # the format reads and writes any range; key groups are the state's concept
    from barrierflow.state.key_groups import KeyGroupRange

KEY_GROUP_FORMAT_VERSION = 1
_PROTOCOL = 5

Section = dict[str, tuple[str, list[tuple[Any, Any]]]]  # state name -> (kind value, entries)


@dataclass(frozen=True)
class EncodedKeyGroups:
    """The stream of some key groups' sections, not yet written."""

    key_group_range: KeyGroupRange
    data: bytes
    offsets: list[tuple[int, int, int]]  # (key group, offset, length)
    states: dict[str, str]  # state name -> kind, of every section

    def write(self, write: Callable[[bytes, str], StreamHandle]) -> list[KeyGroupsHandle]:
        """Writes the stream with ``write(data, "keyed")``; no handle when there is no section."""
        if not self.offsets:
            return []
        kg_range = self.key_group_range
        stream = write(self.data, "keyed")
        return [
            KeyGroupsHandle(
                kg_range.start,
                kg_range.end,
                self.offsets,
                stream,
                format_version=KEY_GROUP_FORMAT_VERSION,
                states=self.states,
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
        chunk = pickle.dumps(section, protocol=_PROTOCOL)
        offsets.append((key_group, position, len(chunk)))
        chunks.append(chunk)
        position += len(chunk)
    return EncodedKeyGroups(key_group_range, b"".join(chunks), offsets, states)


def write_key_groups(
    sections: Iterable[tuple[int, Section]],
    key_group_range: KeyGroupRange,
    write: Callable[[bytes, str], StreamHandle],
) -> list[KeyGroupsHandle]:
    return encode_key_groups(sections, key_group_range).write(write)


def read_key_groups(
    handle: KeyGroupsHandle,
    key_group_range: KeyGroupRange,
    read: Callable[[StreamHandle], bytes],
) -> Iterator[tuple[int, Section]]:
    """The sections of ``handle`` whose key group is in ``key_group_range``, in key-group
    order; the stream is read (``read(handle.stream)``) only if one of them is wanted."""
    if handle.format_version != KEY_GROUP_FORMAT_VERSION:
        raise CorruptCheckpointError(
            _where(handle),
            f"key-group format version {handle.format_version} is not one this barrierflow "
            f"reads ({KEY_GROUP_FORMAT_VERSION}); upgrade barrierflow",
        )
    wanted = [o for o in handle.offsets if o[0] in key_group_range]
    if not wanted:
        return
    data = read(handle.stream)
    for key_group, offset, length in wanted:
        if offset < 0 or offset + length > len(data):
            raise CorruptCheckpointError(
                _where(handle),
                f"section of key group {key_group} at {offset}+{length} is outside the "
                f"{len(data)} bytes of the stream",
            )
        yield key_group, pickle.loads(data[offset : offset + length])


def _where(handle: KeyGroupsHandle) -> str:
    path = getattr(handle.stream, "path", None)
    return (
        path or f"inline keyed state of key groups {handle.key_group_start}-{handle.key_group_end}"
    )
