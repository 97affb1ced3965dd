"""The key-group format (docs/formats.md): sections per key group, read back by range (whole, or
by the byte ranges of the key groups wanted, each section checked by its digest), a version that
is checked, and golden streams of versions 1 and 2 that every later version must read."""

from __future__ import annotations

from pathlib import Path

import pytest

from barrierflow.checkpoint.key_group_format import (
    KEY_GROUP_FORMAT_VERSION,
    encode_key_groups,
    read_key_group_ranges,
    read_key_groups,
    write_key_groups,
)
from barrierflow.checkpoint.metadata import InlineHandle, KeyGroupsHandle
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.key_group_range import KeyGroupRange

FULL = KeyGroupRange(0, 127)
GOLDEN = Path(__file__).parent / "golden" / "key_groups_v1.bin"
GOLDEN_V2 = Path(__file__).parent / "golden" / "key_groups_v2.bin"
GOLDEN_SECTIONS = [
    (3, {"count": ("value", [("apple", 2), (7, 40)])}),
    (
        70,
        {
            "visits": ("list", [(("u", 1), [1, 2, 3])]),
            "seen": ("map", [("k", {"a": 1.5, 2: None})]),
        },
    ),
]


def inline(data: bytes, kind: str) -> InlineHandle:
    return InlineHandle(bytes(data))


def read_inline(handle) -> bytes:
    return handle.data


def test_sections_round_trip_and_a_range_reads_only_its_own_key_groups():
    (handle,) = write_key_groups(GOLDEN_SECTIONS, FULL, inline)
    assert (handle.key_group_start, handle.key_group_end) == (0, 127)
    assert handle.format_version == KEY_GROUP_FORMAT_VERSION
    assert list(read_key_groups(handle, FULL, read_inline)) == GOLDEN_SECTIONS
    assert list(read_key_groups(handle, KeyGroupRange(64, 127), read_inline)) == [
        GOLDEN_SECTIONS[1]
    ]


def test_a_range_without_any_section_of_the_handle_does_not_read_its_stream():
    (handle,) = write_key_groups(GOLDEN_SECTIONS, FULL, inline)

    def must_not_read(stream):
        raise AssertionError("read a stream it needs nothing of")

    assert list(read_key_groups(handle, KeyGroupRange(4, 69), must_not_read)) == []


def test_no_section_writes_no_stream():
    def must_not_write(data, kind):
        raise AssertionError("wrote an empty stream")

    assert write_key_groups([], FULL, must_not_write) == []


def test_sections_must_come_in_key_group_order_within_the_range():
    with pytest.raises(ValueError, match="out of order"):
        encode_key_groups([(5, {}), (5, {})], FULL)
    with pytest.raises(ValueError, match="outside"):
        encode_key_groups([(200, {})], FULL)


def test_the_golden_stream_of_version_1_reads_back():
    data = GOLDEN.read_bytes()
    handle = KeyGroupsHandle(0, 127, [(3, 0, 55), (70, 55, 101)], InlineHandle(data), 1)
    assert list(read_key_groups(handle, FULL, read_inline)) == GOLDEN_SECTIONS


def test_a_handle_of_an_unknown_format_version_is_refused_naming_the_version():
    (handle,) = write_key_groups(GOLDEN_SECTIONS, FULL, inline)
    newer = KeyGroupsHandle(0, 127, handle.offsets, handle.stream, format_version=4)
    with pytest.raises(CorruptCheckpointError, match="key-group format version 4 is not"):
        list(read_key_groups(newer, FULL, read_inline))


def test_offsets_beyond_the_stream_are_reported():
    (handle,) = write_key_groups(GOLDEN_SECTIONS, FULL, inline)
    short = KeyGroupsHandle(0, 127, handle.offsets, InlineHandle(handle.stream.data[:60]))
    with pytest.raises(CorruptCheckpointError, match="outside the 60 bytes"):
        list(read_key_groups(short, FULL, read_inline))


class RangeReads:
    """The reads of an inline stream: whole ones, and the byte ranges asked."""

    def __init__(self) -> None:
        self.whole = 0
        self.ranges: list[tuple[int, int]] = []

    def read(self, handle) -> bytes:
        self.whole += 1
        return handle.data

    def read_range(self, handle, offset: int, length: int) -> bytes:
        self.ranges.append((offset, length))
        return handle.data[offset : offset + length]


def test_a_range_reads_only_the_bytes_of_its_key_groups_in_one_read():
    sections = [(kg, {"n": ("value", [(f"k{kg}", kg)])}) for kg in range(0, 128, 3)]
    (handle,) = write_key_groups(sections, FULL, inline)
    reads = RangeReads()
    wanted = KeyGroupRange(30, 60)
    found = list(read_key_group_ranges(handle, wanted, reads.read, reads.read_range))
    assert found == [s for s in sections if s[0] in wanted]
    ((offset, length),), first, last = reads.ranges, handle.offsets[10], handle.offsets[20]
    assert reads.whole == 0 and (offset, length) == (first[1], last[1] + last[2] - first[1])
    assert length < len(handle.stream.data) / 3


def test_a_corrupted_section_is_refused_before_it_is_unpickled():
    (handle,) = write_key_groups(GOLDEN_SECTIONS, FULL, inline)
    data = bytearray(handle.stream.data)
    data[handle.offsets[1][1] + 20] ^= 1  # inside the second section's pickle
    broken = KeyGroupsHandle(0, 127, handle.offsets, InlineHandle(bytes(data)), 2)
    reads = RangeReads()
    assert (
        next(read_key_group_ranges(broken, FULL, reads.read, reads.read_range))
        == (GOLDEN_SECTIONS[0])
    )
    with pytest.raises(
        CorruptCheckpointError, match="checksum mismatch in the section of key group 70"
    ):
        list(read_key_group_ranges(broken, KeyGroupRange(64, 127), reads.read, reads.read_range))


def test_the_golden_stream_of_version_2_reads_back_whole_and_by_range():
    data = GOLDEN_V2.read_bytes()
    handle = KeyGroupsHandle(0, 127, [(3, 0, 71), (70, 71, 117)], InlineHandle(data), 2)
    assert list(read_key_groups(handle, FULL, read_inline)) == GOLDEN_SECTIONS
    reads = RangeReads()
    assert list(read_key_group_ranges(handle, FULL, reads.read, reads.read_range)) == (
        GOLDEN_SECTIONS
    )


def test_a_version_1_stream_has_no_section_digests_so_a_range_read_reads_it_whole():
    handle = KeyGroupsHandle(
        0, 127, [(3, 0, 55), (70, 55, 101)], InlineHandle(GOLDEN.read_bytes()), 1
    )
    reads = RangeReads()
    found = list(
        read_key_group_ranges(handle, KeyGroupRange(64, 127), reads.read, reads.read_range)
    )
    assert found == [GOLDEN_SECTIONS[1]] and reads.whole == 1 and reads.ranges == []
