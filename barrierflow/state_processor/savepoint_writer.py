"""``SavepointWriter``: a new savepoint, or a changed copy of one, written from Spark (Flink's
State Processor API): operators bootstrapped from DataFrames (``bootstrap.py``), operators
removed, the others carried over.

``write(path)`` writes a self-contained canonical savepoint into ``path``: each new operator's
keyed state by a Spark job with one task per new subtask (its key groups' rows, shuffled to it),
the files of the operators carried over copied by a Spark job with one task per file, then
``_metadata``, last. ``barrierflow run -s PATH`` restores it at any parallelism into either
backend. The driver handles metadata only.

**Threading:** the caller's (the Spark driver's). **I/O:** the snapshot read and the one
written, through Spark jobs; their metadata here.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import msgspec

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    FileHandle,
    IncrementalKeyedHandle,
    KeyGroupsHandle,
    OperatorState,
)
from barrierflow.checkpoint.storage import CheckpointDirectory, locate_snapshot
from barrierflow.datastream.state_backend import HashMapStateBackend, StateBackend, kind_of
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat
from barrierflow.protocol.key_group_range import (
    DEFAULT_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    subtask_for_key_group,
)
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.state.state_schema import type_text
from barrierflow.state_processor.bootstrap import (
    BootstrapTransformation,
    SubtaskWrite,
    decode_subtask,
    write_subtask,
)

if TYPE_CHECKING:  # Spark loads when a write runs
    from pyspark.sql import SparkSession


class SavepointWriter:
    """``new_savepoint(spark, state_backend, max_parallelism)`` or
    ``from_existing_savepoint(spark, path)``, then ``with_operator``/``remove_operator``, then
    ``write(path)``."""

    def __init__(
        self,
        spark: SparkSession,
        state_backend: StateBackend,
        max_parallelism: int,
        existing: tuple[str, CheckpointMetadata] | None = None,
    ) -> None:
        self._spark = spark
        self._backend = _backend_config(state_backend)
        self._max_parallelism = max_parallelism
        self._existing = existing
        self._kept: dict[str, OperatorState] = (
            {op.uid: op for op in existing[1].operators if op.subtasks} if existing else {}
        )
        self._new: dict[str, BootstrapTransformation] = {}

    @staticmethod
    def new_savepoint(
        spark: SparkSession,
        state_backend: StateBackend,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
    ) -> SavepointWriter:
        """An empty savepoint; ``state_backend`` holds the bootstrapped state while it is
        written (``EmbeddedRocksDBStateBackend()`` for more than fits in a task's memory);
        ``max_parallelism``: the job's, which it must keep."""
        if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise ConfigurationError(
                f"max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, got "
                f"{max_parallelism}"
            )
        return SavepointWriter(spark, state_backend, max_parallelism)

    @staticmethod
    def from_existing_savepoint(
        spark: SparkSession,
        path: str,
        state_backend: StateBackend | None = None,
    ) -> SavepointWriter:
        """The savepoint (or retained checkpoint) at ``path``, to change; it is not touched:
        ``write`` makes a new one."""
        try:
            root, metadata = locate_snapshot(path)
        except Exception as e:
            raise ConfigurationError(f"cannot read the savepoint at {path}: {e}") from e
        keyed = [op.max_parallelism for op in metadata.operators if op.subtasks]
        max_parallelism = keyed[0] if keyed else DEFAULT_MAX_PARALLELISM
        return SavepointWriter(
            spark, state_backend or HashMapStateBackend(), max_parallelism, (root, metadata)
        )

    def with_operator(self, uid: str, transformation: BootstrapTransformation) -> SavepointWriter:
        """Adds operator ``uid`` with the state ``transformation`` bootstraps; an operator the
        savepoint has already must be removed first (``remove_operator``)."""
        if not isinstance(transformation, BootstrapTransformation):
            raise ConfigurationError(
                "with_operator() takes OperatorTransformation.bootstrap_with(df).key_by(...)"
                f".transform(function), not {transformation!r:.100}"
            )
        if uid in self._kept or uid in self._new:
            raise ConfigurationError(
                f"the savepoint has an operator {uid!r} already; remove_operator({uid!r}) "
                "first to replace its state"
            )
        self._new[uid] = transformation
        return self

    def remove_operator(self, uid: str) -> SavepointWriter:
        """Leaves operator ``uid``'s state out of the savepoint written."""
        if self._kept.pop(uid, None) is None and self._new.pop(uid, None) is None:
            raise ConfigurationError(
                f"the savepoint has no operator {uid!r} to remove; it has "
                f"{sorted([*self._kept, *self._new])}"
            )
        return self

    def write(self, path: str) -> str:
        """Writes the savepoint into directory ``path`` (new or empty) and returns it.

        1. check that ``path`` is writable and holds no savepoint;
        2. each new operator: a Spark job writes its subtasks' state;
        3. the operators carried over: a Spark job copies their files;
        4. ``_metadata``, last: until it is there, ``path`` is no savepoint.
        """
        path = path.rstrip("/")
        storage = CheckpointDirectory(path)
        if storage.read_small_file(layout.METADATA_FILE) is not None:  # step 1
            raise ConfigurationError(f"{path} holds a savepoint already; choose a new directory")
        storage.check_writable("savepoint directory", "choose another directory")
        operators = [self._bootstrap(uid, t, path) for uid, t in self._new.items()]  # step 2
        kept = list(self._kept.values())
        if kept and self._existing is not None:  # step 3
            self._copy(self._existing[0], path, kept)
        metadata = self._metadata([*kept, *operators])
        storage.write_metadata(metadata, layout.METADATA_FILE)  # step 4
        return path

    def _bootstrap(
        self, uid: str, transformation: BootstrapTransformation, path: str
    ) -> OperatorState:
        sc = self._spark.sparkContext
        max_parallelism = self._max_parallelism
        parallelism = max(1, min(max_parallelism, sc.defaultParallelism))
        select = transformation.key_selector
        write = SubtaskWrite(
            uid,
            parallelism,
            max_parallelism,
            self._backend,
            path,
            file_systems.current_settings(),
            select,
            transformation.function,
        )

        def route(row: Any) -> tuple[int, Any]:
            key_group = assign_to_key_group(select(row), max_parallelism)
            return subtask_for_key_group(max_parallelism, parallelism, key_group), row

        def write_partition(subtask: int, pairs: Any) -> list[bytes]:
            return [write_subtask(write, subtask, (row for _, row in pairs))]

        routed = transformation.dataframe.rdd.map(route).partitionBy(
            parallelism, lambda subtask: subtask
        )
        written = routed.mapPartitionsWithIndex(write_partition).collect()
        subtasks = sorted((decode_subtask(d) for d in written), key=lambda s: s.subtask)
        key_type = type_text(transformation.key_type) if transformation.key_type is not None else ""
        return OperatorState(uid, uid, parallelism, max_parallelism, subtasks, key_type=key_type)

    def _copy(self, source: str, target: str, operators: list[OperatorState]) -> None:
        """Copies every file of ``operators`` from the snapshot at ``source`` into ``target``,
        at the same relative paths (so their handles hold as they are); the handles travel to
        the tasks as MessagePack."""
        files = {f.path: f for op in operators for f in _files(op)}
        if not files:
            return
        encoded = [msgspec.msgpack.encode(files[path]) for path in sorted(files)]
        settings = file_systems.current_settings()

        def copy(handle: bytes) -> None:
            from barrierflow.state_processor.file_copy import copy_state_file

            copy_state_file(
                settings, source, target, msgspec.msgpack.decode(handle, type=FileHandle)
            )

        self._spark.sparkContext.parallelize(encoded, len(encoded)).foreach(copy)

    def _metadata(self, operators: list[OperatorState]) -> CheckpointMetadata:
        native = any(
            isinstance(h, IncrementalKeyedHandle)
            for op in operators
            for s in op.subtasks
            for h in s.keyed_state
        )
        existing = self._existing[1] if self._existing is not None else None
        return CheckpointMetadata(
            job_id=existing.job_id if existing else uuid.uuid4().hex,
            job_name=existing.job_name if existing else "state processor",
            checkpoint_id=existing.checkpoint_id if existing else 1,
            trigger_timestamp_ms=_now_ms(),
            completion_timestamp_ms=_now_ms(),
            operators=operators,
            kind=CheckpointKind.SAVEPOINT,
            snapshot_format=SnapshotFormat.NATIVE if native else SnapshotFormat.CANONICAL,
        )


def _backend_config(state_backend: StateBackend) -> StateBackendConfig:
    """The backend the bootstrap tasks hold state in, of the kind ``state_backend`` names."""
    return StateBackendConfig(kind=kind_of(state_backend).name)


def _files(op: OperatorState) -> list[FileHandle]:
    """Every file an operator's handles name."""
    found = []
    for s in op.subtasks:
        for stream in (s.operator_state, s.channel_state):
            if isinstance(stream, FileHandle):
                found.append(stream)
        for handle in s.keyed_state:
            if isinstance(handle, KeyGroupsHandle):
                if isinstance(handle.stream, FileHandle):
                    found.append(handle.stream)
            else:
                found += [f.file for f in handle.shared]
                found += [p for p in handle.private.values() if isinstance(p, FileHandle)]
    return found


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
