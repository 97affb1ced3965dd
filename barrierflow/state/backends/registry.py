"""The keyed state backends barrierflow knows, in one place: per kind its name
(``state.backend.type``), the factory that makes the keyed backend of an operator subtask, the
``state.backend.<name>.*`` options it reads, whether it keeps state on the subtask's local disk,
whether it takes incremental checkpoints, and the class name Flink's REST API shows for it.

Nothing else branches on a backend's name: the configuration, the environment, the task (its
local directories) and the REST API ask the kind. A new backend is one ``register`` call, made
when its module is imported (on the driver and on the executors, which make its instances).

``StateBackendConfig`` is what the driver decides and ships to every subtask: the kind's name,
the settings every backend reads, and the kind's own options, parsed once on the driver.

**Threading:** register at import; read from any thread. **I/O:** none here; a factory
imports and opens its backend when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from barrierflow.config_option import Option, parse_memory_bytes
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.backends.predefined_options import (
    PRESETS,
    PredefinedOptions,
    RocksDBTuning,
    parse_predefined_options,
)


@dataclass(frozen=True)
class StateBackendConfig:
    """The backend of a job's subtasks, as the driver decided it."""

    kind: str = "hashmap"  # a registered kind's name; the default is Flink's
    local_root: str | None = None  # taskmanager.state.local.root-dirs
    incremental: bool = False  # execution.checkpointing.incremental, where the kind takes it
    local_recovery: bool = False  # execution.state-recovery.from-local
    # the kind's own options, parsed: (key, value); absent keys take the option's default
    options: tuple[tuple[str, Any], ...] = ()
    # under high availability, the epoch of the JobMaster that runs the subtasks: its local
    # state is apart from a paused older leader's, whose subtasks may still run on this machine
    leader_epoch: int = 0

    @property
    def keeps_local_state(self) -> bool:
        """Whether each subtask's backend works in a directory of its own on local disk."""
        return backend_kind(self.kind).keeps_local_state


# (config, max parallelism, the subtask's key groups, its local directory, its local recovery
# directory or None) -> the keyed state backend of one operator subtask
KeyedBackendFactory = Callable[
    [StateBackendConfig, int, KeyGroupRange, str, str | None], KeyedStateBackend
]


@dataclass(frozen=True)
class StateBackendKind:
    name: str  # what state.backend.type takes, case-insensitively
    rest_class: str  # what the REST API shows (Flink's class name)
    factory: KeyedBackendFactory
    options: tuple[Option, ...] = ()  # keys under state.backend.<name>.
    keeps_local_state: bool = False  # a local directory per subtask (and local recovery copies)
    incremental_checkpoints: bool = False  # takes execution.checkpointing.incremental
    # keeps state as Python objects in memory, so operators may keep some of it in memory
    # too and copy it in at snapshots (the window operator's aligned windows)
    state_on_heap: bool = False

    def option(self, config: StateBackendConfig, key: str) -> Any:
        """The value of one of this kind's options in ``config`` (its default if not set)."""
        (option,) = [o for o in self.options if o.key == key]
        return dict(config.options).get(key, option.default)


_KINDS: dict[str, StateBackendKind] = {}


def register(kind: StateBackendKind) -> StateBackendKind:
    """Makes ``kind`` known to the configuration, the environment, the runtime and the REST API.
    Its options must be keys under ``state.backend.<name>.``, each known once."""
    if kind.name.lower() in (k.lower() for k in _KINDS):
        raise ConfigurationError(f"a state backend named {kind.name!r} is registered already")
    prefix = f"state.backend.{kind.name}."
    taken = {o.key for k in _KINDS.values() for o in k.options}
    for option in kind.options:
        if not option.key.startswith(prefix) or option.key in taken:
            raise ConfigurationError(
                f"state backend {kind.name!r}: option {option.key!r} must be a key of its own "
                f"under {prefix!r}"
            )
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Forgets a kind (tests that register one of their own)."""
    del _KINDS[name]


def backend_kind(name: str) -> StateBackendKind:
    kind = _KINDS.get(name)
    if kind is None:
        raise ConfigurationError(
            f"unknown state backend {name!r}; state.backend.type is one of "
            f"{', '.join(_KINDS)} (a backend of your own must be registered in "
            "barrierflow.state.backends.registry, on the driver and the executors)"
        )
    return kind


def registered() -> list[StateBackendKind]:
    return list(_KINDS.values())


def parse_kind_name(value: Any) -> str:
    """``state.backend.type``'s parser: a registered name, in any case."""
    text = str(value).strip().lower()
    for name in _KINDS:
        if name.lower() == text:
            return name
    raise ValueError("one of " + ", ".join(_KINDS))


def option(key: str) -> Option | None:
    """The registered backend option of ``key``, if any."""
    return next((o for k in _KINDS.values() for o in k.options if o.key == key), None)


# --- the built-in kinds ------------------------------------------------------------------------


def _heap(config, max_parallelism, key_group_range, local_dir, recovery_dir) -> KeyedStateBackend:
    from barrierflow.state.backends.hashmap import HeapKeyedStateBackend

    return HeapKeyedStateBackend(max_parallelism, key_group_range)


def _rocksdb(
    config, max_parallelism, key_group_range, local_dir, recovery_dir
) -> KeyedStateBackend:
    from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend

    tuning = rocksdb_tuning(config)
    # rocksdb_tuning sets every sized field: as configured, as preset, or the default
    assert tuning.block_cache_bytes is not None and tuning.write_buffer_bytes is not None
    assert tuning.target_file_size_bytes is not None and tuning.level_base_bytes is not None
    return RocksDBKeyedStateBackend(
        max_parallelism,
        key_group_range,
        local_dir,
        block_cache_bytes=tuning.block_cache_bytes,
        write_buffer_bytes=tuning.write_buffer_bytes,
        target_file_size_bytes=tuning.target_file_size_bytes,
        level_base_bytes=tuning.level_base_bytes,
        incremental=config.incremental,
        local_recovery_dir=recovery_dir,
        tuning=tuning,
    )


def rocksdb_tuning(config: StateBackendConfig) -> RocksDBTuning:
    """The RocksDB settings of ``config``: each sized option as set in the configuration, else
    as its predefined options set it, else its default (Flink's precedence)."""
    preset = PRESETS[ROCKSDB.option(config, PREDEFINED_OPTIONS)]
    explicit = dict(config.options)
    sized = {}
    for field, key in _SIZED.items():
        from_preset = getattr(preset, field)
        if key in explicit or from_preset is None:
            sized[field] = ROCKSDB.option(config, key)
        else:
            sized[field] = from_preset
    return replace(preset, **sized)


def _positive(value: int) -> bool:
    return value > 0


_BLOCK_CACHE = "state.backend.rocksdb.block.cache-size"
_WRITE_BUFFER = "state.backend.rocksdb.writebuffer.size"
_TARGET_FILE_SIZE = "state.backend.rocksdb.compaction.level.target-file-size-base"
_LEVEL_BASE = "state.backend.rocksdb.compaction.level.max-size-level-base"
PREDEFINED_OPTIONS = "state.backend.rocksdb.predefined-options"  # set by the backend object too
# RocksDBTuning's field -> the option that sets it
_SIZED = {
    "block_cache_bytes": _BLOCK_CACHE,
    "write_buffer_bytes": _WRITE_BUFFER,
    "target_file_size_bytes": _TARGET_FILE_SIZE,
    "level_base_bytes": _LEVEL_BASE,
}

# state as Python objects on the heap; full snapshots
HASHMAP = register(StateBackendKind("hashmap", "HashMapStateBackend", _heap, state_on_heap=True))
_ROCKSDB_OPTIONS = (
    Option(_BLOCK_CACHE, parse_memory_bytes, 64 * 1024**2, "RocksDB block cache per subtask",
           check=_positive, check_text="positive"),
    Option(_WRITE_BUFFER, parse_memory_bytes, 64 * 1024**2, "RocksDB memtable size per subtask",
           check=_positive, check_text="positive"),
    Option(_TARGET_FILE_SIZE, parse_memory_bytes, 64 * 1024**2, "RocksDB SST file size that "
           "compactions aim at (smaller: incremental checkpoints upload less after a "
           "compaction)", check=_positive, check_text="positive"),
    Option(_LEVEL_BASE, parse_memory_bytes, 256 * 1024**2,
           "RocksDB size of the first level below level 0", check=_positive,
           check_text="positive"),
    Option(PREDEFINED_OPTIONS, parse_predefined_options, PredefinedOptions.DEFAULT,
           "RocksDB's predefined option set (PredefinedOptions); the options above, where "
           "set, win over it"),
)  # fmt: skip
# state in an embedded RocksDB per subtask, on local disk; full or incremental snapshots
ROCKSDB = register(
    StateBackendKind(
        "rocksdb",
        "EmbeddedRocksDBStateBackend",
        _rocksdb,
        options=_ROCKSDB_OPTIONS,
        keeps_local_state=True,
        incremental_checkpoints=True,
    )
)
