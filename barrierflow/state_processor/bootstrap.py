"""Keyed state written from a DataFrame (Flink's ``OperatorTransformation.bootstrap_with(df)
.key_by(selector).transform(function)``): each row goes, by its key's key group, to the Spark
task of the new subtask that owns that key group; the task feeds its rows to the
``KeyedStateBootstrapFunction`` over a state backend of its own (the one the savepoint writer
was given), then writes that backend's snapshot in the canonical key-group format into the
savepoint's directory, and returns the handles.

**Threading:** ``write_subtask`` runs in a Spark task, on its thread. **I/O:** the savepoint's
directory; a local scratch directory for a RocksDB backend.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import OperatorSubtaskState
from barrierflow.checkpoint.state_streams import CheckpointStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common.typeinfo import TypeInformation, checked_type
from barrierflow.datastream.functions.one_input import RuntimeContext
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.protocol.key_group_range import key_group_range_for_subtask
from barrierflow.runtime.timer_service import InternalTimerService
from barrierflow.state.backends import StateBackendConfig, create_keyed_state_backend
from barrierflow.state.keyed_state_store import KeyedStateStore
from barrierflow.state_processor.functions import KeyedStateBootstrapFunction

INLINE_THRESHOLD = 20 * 1024  # as execution.checkpointing.data-inline-threshold's default


class OperatorTransformation:
    """Where a new operator's state comes from: ``bootstrap_with(dataframe)``."""

    @staticmethod
    def bootstrap_with(dataframe: Any) -> OneInputOperatorTransformation:
        if not hasattr(dataframe, "rdd"):
            raise ConfigurationError(
                f"bootstrap_with() takes a Spark DataFrame, not {type(dataframe).__name__}"
            )
        return OneInputOperatorTransformation(dataframe)


class OneInputOperatorTransformation:
    def __init__(self, dataframe: Any) -> None:
        self._dataframe = dataframe

    def key_by(
        self, key_selector: Callable[[Any], Any], key_type: TypeInformation | None = None
    ) -> KeyedOperatorTransformation:
        """``key_selector`` takes a row of the DataFrame (a ``pyspark.sql.Row``) and returns
        its key, as the job's ``key_by`` returns it for the records that will find this state;
        ``key_type``: the key type the job declares, if it does."""
        select = getattr(key_selector, "get_key", key_selector)
        if not callable(select):
            raise ConfigurationError(f"key_by() needs a function, got {key_selector!r}")
        return KeyedOperatorTransformation(
            self._dataframe, select, checked_type(key_type, "key_by()")
        )


class KeyedOperatorTransformation:
    def __init__(self, dataframe: Any, key_selector: Callable, key_type: Any) -> None:
        self._dataframe = dataframe
        self._key_selector = key_selector
        self._key_type = key_type

    def transform(self, function: KeyedStateBootstrapFunction) -> BootstrapTransformation:
        if not callable(getattr(function, "process_element", None)):
            raise ConfigurationError(
                f"transform() needs a KeyedStateBootstrapFunction, got {function!r:.100}"
            )
        return BootstrapTransformation(
            self._dataframe, self._key_selector, self._key_type, function
        )


@dataclass(frozen=True)
class BootstrapTransformation:
    """A new operator's keyed state, to write with ``SavepointWriter.with_operator``."""

    dataframe: Any
    key_selector: Callable[[Any], Any]
    key_type: TypeInformation | None
    function: KeyedStateBootstrapFunction


@dataclass(frozen=True)
class SubtaskWrite:
    """What a task needs to write one new subtask's state (shipped to it by Spark)."""

    uid: str
    parallelism: int
    max_parallelism: int
    backend: StateBackendConfig
    savepoint_uri: str
    file_systems: file_systems.FileSystemSettings
    key_selector: Callable[[Any], Any]
    function: KeyedStateBootstrapFunction


_SAVEPOINT_FORMAT = SnapshotFormat.CANONICAL


def write_subtask(write: SubtaskWrite, subtask: int, rows: Iterable[Any]) -> bytes:
    """Runs the bootstrap function over ``rows`` (this subtask's) and writes the snapshot;
    returns the subtask's ``OperatorSubtaskState``, as MessagePack."""
    file_systems.initialize(write.file_systems)
    key_groups = key_group_range_for_subtask(write.max_parallelism, write.parallelism, subtask)
    local_dir = tempfile.mkdtemp(prefix="barrierflow-bootstrap-")
    backend = create_keyed_state_backend(
        write.backend, write.max_parallelism, key_groups, f"{local_dir}/state"
    )
    try:
        where = f"bootstrapping operator {write.uid!r}, subtask {subtask}"
        store = KeyedStateStore(backend, where=where)
        context = RuntimeContext(
            write.uid, subtask, write.parallelism, store, max_parallelism=write.max_parallelism
        )
        timers = InternalTimerService(backend, write.max_parallelism)
        function, select = write.function, write.key_selector
        function.open(context)
        ctx = KeyedStateBootstrapFunction.Context(backend.key_context, timers)
        for row in rows:
            backend.key_context.key = select(row)
            function.process_element(row, ctx)
        function.close()
        options = CheckpointOptions(
            CheckpointKind.SAVEPOINT, _SAVEPOINT_FORMAT, target_location=write.savepoint_uri
        )
        streams = CheckpointStreams(
            CheckpointDirectory(write.savepoint_uri),
            1,
            write.uid,
            subtask,
            1,
            INLINE_THRESHOLD,
            savepoint=True,
        )
        handles = backend.snapshot(1, options)(streams)
    finally:
        backend.dispose()
        shutil.rmtree(local_dir, ignore_errors=True)
    return msgspec.msgpack.encode(OperatorSubtaskState(subtask, None, handles))


def decode_subtask(data: bytes) -> OperatorSubtaskState:
    return msgspec.msgpack.decode(data, type=OperatorSubtaskState)
