"""Version 3 of the key-group format (docs/formats.md): state tables whole with the key group
of each key, read back whole, filtered by range, or regrouped into version 2's sections for
the readers of sections; the stream left unread when the range wants none of it; a golden
stream that every later barrierflow must read."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from barrierflow.checkpoint.key_group_format import read_key_group_ranges, read_key_groups
from barrierflow.checkpoint.key_group_tables import (
    TABLES_FORMAT_VERSION,
    read_key_group_tables,
    write_key_group_tables,
)
from barrierflow.checkpoint.metadata import InlineHandle, KeyGroupsHandle
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.key_group_range import KeyGroupRange
from tests.unit.checkpoint.test_key_group_format import GOLDEN_SECTIONS, inline, read_inline

FULL = KeyGroupRange(0, 127)
GOLDEN_V3 = Path(__file__).parent / "golden" / "key_groups_v3.bin"
# The tables of the version 2 golden sections (test_key_group_format.py), with their key groups.
GOLDEN_TABLES = {
    "count": ("value", [3, 3], {"apple": 2, 7: 40}),
    "visits": ("list", [70], {("u", 1): [1, 2, 3]}),
    "seen": ("map", [70], {"k": {"a": 1.5, 2: None}}),
}


def must_not_read(stream) -> bytes:
    raise AssertionError("read a stream it needs nothing of")


def test_tables_round_trip_whole_and_the_handle_names_the_key_groups_present():
    (handle,) = write_key_group_tables(GOLDEN_TABLES, FULL, inline, "hashmap", {"count": "LONG"})
    assert handle.format_version == TABLES_FORMAT_VERSION == 3
    assert [kg for kg, _, _ in handle.offsets] == [3, 70]
    assert handle.states == {"count": "value", "visits": "list", "seen": "map"}
    assert handle.types == {"count": "LONG"} and handle.backend == "hashmap"
    read = list(read_key_group_tables(handle, FULL, read_inline))
    assert read == [(name, kind, table) for name, (kind, _, table) in GOLDEN_TABLES.items()]


def test_a_range_gets_only_the_keys_of_its_key_groups():
    (handle,) = write_key_group_tables(GOLDEN_TABLES, FULL, inline)
    high = list(read_key_group_tables(handle, KeyGroupRange(64, 127), read_inline))
    assert high == [
        ("visits", "list", {("u", 1): [1, 2, 3]}),
        ("seen", "map", {"k": {"a": 1.5, 2: None}}),
    ]
    assert list(read_key_group_tables(handle, KeyGroupRange(4, 69), must_not_read)) == []


def test_readers_of_sections_get_what_version_2_would_hold():
    (handle,) = write_key_group_tables(GOLDEN_TABLES, FULL, inline)
    assert list(read_key_groups(handle, FULL, read_inline)) == GOLDEN_SECTIONS
    assert list(read_key_groups(handle, KeyGroupRange(0, 63), read_inline)) == [GOLDEN_SECTIONS[0]]
    assert list(read_key_groups(handle, KeyGroupRange(4, 69), must_not_read)) == []


def test_a_range_read_of_a_version_3_stream_reads_it_whole():
    (handle,) = write_key_group_tables(GOLDEN_TABLES, FULL, inline)

    def no_ranges(stream, offset: int, length: int) -> bytes:
        raise AssertionError("a version 3 stream has no sections to seek")

    found = list(read_key_group_ranges(handle, KeyGroupRange(64, 127), read_inline, no_ranges))
    assert found == [GOLDEN_SECTIONS[1]]


def test_empty_tables_write_nothing():
    def must_not_write(data, kind):
        raise AssertionError("wrote an empty stream")

    assert write_key_group_tables({"n": ("value", [], {})}, FULL, must_not_write) == []


def test_keys_outside_the_range_or_key_groups_that_do_not_match_the_keys_are_refused():
    with pytest.raises(ValueError, match=r"key groups \[70\] are outside"):
        write_key_group_tables(GOLDEN_TABLES, KeyGroupRange(0, 63), inline)
    with pytest.raises(ValueError, match="state 'n': 1 key groups for 2 keys"):
        write_key_group_tables({"n": ("value", [1], {"a": 1, "b": 2})}, FULL, inline)


def test_a_stream_whose_key_groups_do_not_match_its_keys_is_reported_corrupt():
    body = pickle.dumps({"n": ("value", [1], {"a": 1, "b": 2})}, protocol=5)
    handle = KeyGroupsHandle(0, 127, [(1, 0, len(body))], InlineHandle(body), 3)
    with pytest.raises(CorruptCheckpointError, match="'n' has 2 keys and 1 key groups"):
        list(read_key_group_tables(handle, FULL, read_inline))
    with pytest.raises(CorruptCheckpointError, match="'n' has 2 keys and 1 key groups"):
        list(read_key_groups(handle, FULL, read_inline))


def test_the_golden_stream_of_version_3_reads_back_as_tables_and_as_sections():
    data = GOLDEN_V3.read_bytes()
    handle = KeyGroupsHandle(0, 127, [(3, 0, len(data)), (70, 0, len(data))], InlineHandle(data), 3)
    tables = list(read_key_group_tables(handle, FULL, read_inline))
    assert tables == [(name, kind, table) for name, (kind, _, table) in GOLDEN_TABLES.items()]
    assert list(read_key_groups(handle, FULL, read_inline)) == GOLDEN_SECTIONS
