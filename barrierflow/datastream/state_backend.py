"""State backends, as PyFlink names them: ``env.set_state_backend(EmbeddedRocksDBStateBackend())``.

These only choose a kind of ``state/backends/registry.py`` (by their ``name``); the runtime makes
one keyed backend of that kind per operator subtask (``state/backends/hashmap.py``:
HeapKeyedStateBackend, ``state/backends/rocksdb/``: RocksDBKeyedStateBackend). Equivalent to
``state.backend.type: hashmap | rocksdb``; a kind registered without a class of its own here is
chosen by ``state.backend.type`` (or ``NamedStateBackend(name)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from barrierflow.errors import ConfigurationError
from barrierflow.state.backends.predefined_options import PredefinedOptions
from barrierflow.state.backends.registry import (
    HASHMAP,
    PREDEFINED_OPTIONS,
    ROCKSDB,
    StateBackendKind,
    backend_kind,
)

__all__ = [
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "NamedStateBackend",
    "PredefinedOptions",
    "StateBackend",
]


@dataclass(frozen=True)
class HashMapStateBackend:
    """State as Python objects on the heap; full snapshots. Fast; state must fit in memory."""

    name: str = HASHMAP.name


@dataclass
class EmbeddedRocksDBStateBackend:
    """State in an embedded RocksDB per subtask, on local disk: larger than memory.

    ``enable_incremental_checkpointing``: None (the default) takes
    ``execution.checkpointing.incremental`` from the configuration, as Flink does. Mutable as
    PyFlink's is, for ``set_predefined_options``.
    """

    enable_incremental_checkpointing: bool | None = None
    name: str = ROCKSDB.name
    # None: state.backend.rocksdb.predefined-options of the configuration
    predefined_options: PredefinedOptions | None = None
    db_storage_paths: tuple[str, ...] = ()  # (): taskmanager.state.local.root-dirs
    number_of_transfer_threads: int = (
        4  # Flink's default (state.backend.rocksdb.checkpoint.transfer.thread.num)
    )

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        """RocksDB settings for a kind of disk (docs/pyflink-compatibility.md lists which
        apply); ``state.backend.rocksdb.*`` options set in the configuration win over them."""
        if not isinstance(options, PredefinedOptions):
            raise ConfigurationError(
                "set_predefined_options() takes a PredefinedOptions member (from "
                f"barrierflow.datastream.state_backend), got {options!r}"
            )
        self.predefined_options = options

    def get_predefined_options(self) -> PredefinedOptions:
        """What ``set_predefined_options`` set; DEFAULT if nothing was, as in PyFlink."""
        return self.predefined_options or PredefinedOptions.DEFAULT

    def is_incremental_checkpoints_enabled(self) -> bool:
        """Whether this backend object asks for incremental checkpoints (None: the
        configuration decides, and this is False, as in PyFlink)."""
        return bool(self.enable_incremental_checkpointing)

    def set_db_storage_paths(self, *paths: str) -> None:
        """Where each subtask's database keeps its working files, over
        ``taskmanager.state.local.root-dirs``; none given: back to it. Flink spreads the
        states of a subtask over several paths; here a subtask's database is one directory,
        under the first path."""
        for path in paths:
            if not isinstance(path, str) or not path:
                raise ConfigurationError(f"set_db_storage_paths() takes paths, got {path!r}")
        self.db_storage_paths = tuple(paths)

    def get_db_storage_paths(self) -> list[str]:
        return list(self.db_storage_paths)

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        """The threads that upload a subtask's files at a checkpoint and download them at a
        restore (Flink's default 4). Kept and read back; barrierflow's uploads run on the
        slot's snapshot pool, shared by its subtasks, whose size this does not change."""
        n = number_of_transfering_threads
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(f"number of transfer threads must be positive, got {n!r}")
        self.number_of_transfer_threads = n

    def get_number_of_transfer_threads(self) -> int:
        return self.number_of_transfer_threads


@dataclass(frozen=True)
class NamedStateBackend:
    """A registered kind that has no class of its own here, chosen by its name."""

    name: str


StateBackend = HashMapStateBackend | EmbeddedRocksDBStateBackend | NamedStateBackend

_CLASSES = (HashMapStateBackend, EmbeddedRocksDBStateBackend)


def kind_of(backend: object) -> StateBackendKind:
    """The registry's kind of a backend object; a ``ConfigurationError`` for anything else."""
    if not isinstance(backend, StateBackend):
        raise ConfigurationError(
            "set_state_backend() takes HashMapStateBackend() or EmbeddedRocksDBStateBackend() "
            f"from barrierflow.datastream.state_backend, got {backend!r}"
        )
    return backend_kind(backend.name)


def state_backend_named(name: str) -> StateBackend:
    """What ``state.backend.type: name`` stands for: this module's class of that kind, else
    a ``NamedStateBackend``."""
    backend_kind(name)
    for cls in _CLASSES:
        if cls().name == name:
            return cls()
    return NamedStateBackend(name)


def backend_options(backend: StateBackend) -> dict[str, Any]:
    """The kind's options the backend object sets, which win over the configuration's."""
    if isinstance(backend, EmbeddedRocksDBStateBackend) and backend.predefined_options is not None:
        return {PREDEFINED_OPTIONS: backend.predefined_options}
    return {}


def local_directories(backend: StateBackend) -> tuple[str, ...]:
    """Where the backend object says its subtasks keep working files (): the configuration's)."""
    if isinstance(backend, EmbeddedRocksDBStateBackend):
        return backend.db_storage_paths
    return ()


def incremental_checkpointing(backend: StateBackend) -> bool | None:
    """What the backend object says of incremental checkpoints (None: the configuration's)."""
    if isinstance(backend, EmbeddedRocksDBStateBackend):
        return backend.enable_incremental_checkpointing
    return None
