"""A job's checkpoint directory written in-process, as a job writes it, without Spark: each
subtask's keyed state backend takes a snapshot per checkpoint into real checkpoint storage
(incremental RocksDB checkpoints reuse the SST files of the last one, as after a completed
checkpoint), then ``chk-N/_metadata`` is written. For tests and benchmarks of what reads
checkpoint directories (``checkpoints fsck``, the state processor).

**Threading:** one thread. **I/O:** the checkpoint storage and local RocksDB directories.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

from barrierflow.checkpoint.metadata import CheckpointMetadata, OperatorState, OperatorSubtaskState
from barrierflow.checkpoint.state_streams import CheckpointStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common.typeinfo import Types
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT
from barrierflow.protocol.key_group_range import key_group_range_for_subtask, subtask_for_key_group
from barrierflow.state.backends import StateBackendConfig, create_keyed_state_backend
from barrierflow.state.descriptors import ValueStateDescriptor
from barrierflow.state.key_groups import assign_to_key_group

COUNT = ValueStateDescriptor("count", Types.LONG())


def write_job_checkpoints(
    job_root_uri: str,
    checkpoints: int,
    keys_per_checkpoint: int,
    backend: str = "rocksdb",
    incremental: bool = True,
    parallelism: int = 2,
    max_parallelism: int = 128,
    uid: str = "count",
    inline_threshold: int = 1024,
    key_of: Callable[[int], Any] = lambda i: i,
) -> list[CheckpointMetadata]:
    """Checkpoints 1..``checkpoints`` of a job whose operator ``uid`` counts per key: before
    checkpoint N, each of ``keys_per_checkpoint`` new keys (``key_of(i)``) is counted once and
    the keys of checkpoint N-1 once more. Returns their metadata, oldest first."""
    storage = CheckpointDirectory(job_root_uri)
    small = (("state.backend.rocksdb.block.cache-size", 1 << 20),
             ("state.backend.rocksdb.writebuffer.size", 1 << 20))  # fmt: skip
    config = StateBackendConfig(kind=backend, incremental=incremental, options=small)
    scratch = tempfile.mkdtemp(prefix="barrierflow-checkpoints-")
    backends = [
        create_keyed_state_backend(
            config,
            max_parallelism,
            key_group_range_for_subtask(max_parallelism, parallelism, s),
            f"{scratch}/{s}",
        )
        for s in range(parallelism)
    ]
    written = []
    try:
        for cid in range(1, checkpoints + 1):
            _count(backends, cid, keys_per_checkpoint, max_parallelism, key_of)
            subtasks = []
            for index, b in enumerate(backends):
                streams = CheckpointStreams(storage, cid, uid, index, 1, inline_threshold)
                subtasks.append(
                    OperatorSubtaskState(index, None, b.snapshot(cid, CHECKPOINT)(streams))
                )
                b.notify_checkpoint_complete(cid)
            now = time.time_ns() // 1_000_000
            op = OperatorState(
                uid, "Count", parallelism, max_parallelism, subtasks, key_type="LONG"
            )
            metadata = CheckpointMetadata("job", "checkpoints", cid, now, now, [op])
            storage.write_metadata(metadata)
            written.append(metadata)
    finally:
        for b in backends:
            b.dispose()
        shutil.rmtree(scratch, ignore_errors=True)
    return written


def _count(backends, cid: int, keys: int, max_parallelism: int, key_of) -> None:
    parallelism = len(backends)
    for i in range(max(0, (cid - 2) * keys), cid * keys):
        key = key_of(i)
        kg = assign_to_key_group(key, max_parallelism)
        backend = backends[subtask_for_key_group(max_parallelism, parallelism, kg)]
        backend.key_context.key = key
        state = backend.get_state(COUNT)
        state.update((state.value() or 0) + 1)
