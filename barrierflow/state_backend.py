"""State backends, as PyFlink names them: ``env.set_state_backend(EmbeddedRocksDBStateBackend())``.

These only choose; the runtime makes one keyed backend per operator subtask
(``state/backends/hashmap.py``: HeapKeyedStateBackend, ``state/backends/rocksdb/``:
RocksDBKeyedStateBackend). Equivalent to ``state.backend.type: hashmap | rocksdb``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HashMapStateBackend:
    """State as Python objects on the heap; full snapshots. Fast; state must fit in memory."""

    name: str = "hashmap"


@dataclass(frozen=True)
class EmbeddedRocksDBStateBackend:
    """State in an embedded RocksDB per subtask, on local disk: larger than memory.

    ``enable_incremental_checkpointing``: None (the default) takes
    ``execution.checkpointing.incremental`` from the configuration, as Flink does.
    """

    enable_incremental_checkpointing: bool | None = None
    name: str = "rocksdb"


StateBackend = HashMapStateBackend | EmbeddedRocksDBStateBackend
