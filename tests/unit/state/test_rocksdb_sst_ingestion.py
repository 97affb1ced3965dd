"""Restoring the key-group format into RocksDB by SST ingestion: the same reads as the heap
backend, which restores entry by entry, at another parallelism, for value, list, map and typed
states and keys of every hashable type; SST files rolled at the target size; a key in the wrong
key group refused, naming it, with no SST file left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from barrierflow.checkpoint.key_group_format import write_key_groups
from barrierflow.common.typeinfo import Types
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend
from barrierflow.state.backends.rocksdb.database import INGEST
from barrierflow.state.key_groups import assign_to_key_group
from tests.unit.state.test_state_backend_contract import MAX_PARALLELISM, SMALL, Streams

FULL = KeyGroupRange(0, MAX_PARALLELISM - 1)
KEYS = [
    *range(-50, 1500),
    *(f"user-{i}" for i in range(300)),
    *((i, "t") for i in range(100)),
    2.5,
    b"raw",
    None,
    ("nested", (1, 2.5)),
]
DESCRIPTORS = (
    ValueStateDescriptor("count"),
    ValueStateDescriptor("typed", Types.LONG()),
    ListStateDescriptor("seen"),
    MapStateDescriptor("by-name"),
    ValueStateDescriptor("repeated"),  # few distinct values: each pickled once
    ValueStateDescriptor("equal-values-of-other-types"),  # which must not be merged
)


@pytest.fixture
def streams(tmp_path: Path) -> Streams:
    return Streams(tmp_path)


def states(backend) -> list:
    return [backend.get_state(d) for d in DESCRIPTORS]


def fill(backend: HeapKeyedStateBackend) -> None:
    count, typed_count, seen, by_name, repeated, mixed = states(backend)
    for i, key in enumerate(KEYS):
        backend.key_context.key = key
        repeated.update(i % 3 if i % 11 else "eleventh")
        mixed.update([1, True, 1.0, 0, False][i % 5])
        count.update((i, str(key)))
        if i % 2:
            typed_count.update(i * 1000)
        if i % 3:
            seen.update([i, str(i)])
        if i % 5:
            by_name.put_all({"i": i, i: [i], (i, "t"): None, 1.0: "one"})


def view(backend, key) -> tuple:
    backend.key_context.key = key
    values = [s.value() for s in states(backend) if hasattr(s, "value")]
    seen, by_name = states(backend)[2:4]
    return (*((v, type(v)) for v in values), seen.get(), dict(by_name.items()))


def rocksdb(tmp_path: Path, key_group_range: KeyGroupRange, **options) -> RocksDBKeyedStateBackend:
    local_dir = tmp_path / f"rocksdb-{key_group_range.start}-{key_group_range.end}"
    return RocksDBKeyedStateBackend(
        MAX_PARALLELISM, key_group_range, str(local_dir), SMALL, SMALL, **options
    )


@pytest.mark.parametrize("parallelism", [1, 3])
def test_ingested_restore_reads_as_the_heap_backend_restored_entry_by_entry(
    tmp_path, streams, parallelism
):
    source = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    fill(source)
    handles = source.snapshot(1)(streams)
    for subtask in range(parallelism):
        kg_range = key_group_range_for_subtask(MAX_PARALLELISM, parallelism, subtask)
        heap = HeapKeyedStateBackend(MAX_PARALLELISM, kg_range)
        heap.restore(handles, streams)
        ingested = rocksdb(tmp_path, kg_range, target_file_size_bytes=16 << 10)
        try:
            ingested.restore(handles, streams)
            owned = [k for k in KEYS if assign_to_key_group(k, MAX_PARALLELISM) in kg_range]
            assert owned
            for key in KEYS:
                assert view(ingested, key) == view(heap, key), key
            assert not os.path.exists(os.path.join(ingested.local_dir, INGEST))
        finally:
            ingested.dispose()


def test_small_target_file_size_ingests_several_files_per_state(tmp_path, streams):
    source = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    fill(source)
    handles = source.snapshot(1)(streams)
    ingested = rocksdb(tmp_path, FULL, target_file_size_bytes=4 << 10)
    try:
        ingested.restore(handles, streams)
        files = ingested._db.live_files()  # of every column family
        assert len(files) > 2 * len(DESCRIPTORS)
        assert sum(f["num_entries"] for f in files) > len(KEYS)
        assert [view(ingested, k) for k in KEYS] == [view(source, k) for k in KEYS]
    finally:
        ingested.dispose()


def test_a_key_in_another_key_group_than_its_hash_is_refused_naming_it(tmp_path, streams):
    key = "misplaced"
    wrong = (assign_to_key_group(key, MAX_PARALLELISM) + 1) % MAX_PARALLELISM
    handles = write_key_groups([(wrong, {"count": ("value", [(key, 1)])})], FULL, streams.write)
    target = rocksdb(tmp_path, FULL)
    try:
        with pytest.raises(ValueError, match="'misplaced' is in key group"):
            target.restore(handles, streams)
        assert not os.path.exists(os.path.join(target.local_dir, INGEST))
    finally:
        target.dispose()
