"""Canonical savepoint restore into RocksDB, in-process: K keys of a count, snapshot by the heap
backend in the key-group format (what a canonical savepoint holds), then restored into one
RocksDB backend per subtask at parallelism P, one after the other; no Spark, so that the figure
is the restore's own work (reading the stream, the rows, writing them into the database).

Prints one JSON line per round: each subtask's restore time and the microseconds per key
(restore time over the keys it restored, median of the subtasks).

    python bench/savepoint_restore.py --keys 2000000 --parallelism 2 --rounds 3

``bench/large_state.py --savepoints --restore-from savepoint-canonical`` measures the same
restore in whole jobs on Spark.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import tempfile
import time

from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.protocol.key_group_range import KeyGroupRange, key_group_range_for_subtask
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend


def snapshot(root: str, keys: int, max_parallelism: int) -> list:
    """The key-group format of ``keys`` counts (1 to 8, as after a few updates each)."""
    heap = HeapKeyedStateBackend(max_parallelism, KeyGroupRange(0, max_parallelism - 1))
    count = heap.get_state(ValueStateDescriptor("count"))
    for key in range(keys):
        heap.key_context.key = key
        count.update(1 + key % 8)
    storage = CheckpointDirectory(root)
    streams = CheckpointStreams(storage, 1, "count", 0, 1, inline_threshold=0)
    return heap.snapshot(1)(streams)


def restore_round(root: str, handles: list, args: argparse.Namespace) -> dict:
    storage = CheckpointDirectory(root)
    seconds, per_key = [], []
    for subtask in range(args.parallelism):
        kg_range = key_group_range_for_subtask(args.max_parallelism, args.parallelism, subtask)
        local_dir = tempfile.mkdtemp(prefix="barrierflow-restore-bench-")
        backend = RocksDBKeyedStateBackend(args.max_parallelism, kg_range, local_dir)
        started = time.perf_counter()
        backend.restore(handles, StorageRestoreStreams(storage, shares_storage=False))
        elapsed = time.perf_counter() - started
        restored = sum(1 for _ in backend.entries("count"))
        backend.dispose()
        seconds.append(round(elapsed, 3))
        per_key.append(elapsed / restored * 1e6)
    return {"restore_s": seconds, "us_per_key": round(statistics.median(per_key), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2_000_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--max-parallelism", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="barrierflow-restore-bench-")
    try:
        handles = snapshot(root, args.keys, args.max_parallelism)
        gc.collect()  # the heap backend's objects, before the restores
        for _ in range(args.rounds):
            line = {"keys": args.keys, "parallelism": args.parallelism}
            print(json.dumps({**line, **restore_round(root, handles, args)}), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
