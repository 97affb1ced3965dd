"""Stream operators: what a chain runs, a list of records at a time.

An operator takes the records of one buffer and returns its outputs as a list, which is faster
in Python than pushing records one by one through the chain. A failure in user code is raised
as ``UserFunctionError`` naming the operator, the subtask, the record (and key), with the
original exception chained.

**Threading:** the task thread only, except ``OperatorSnapshot.keyed`` (background).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.connectors.sink import SinkWriterContext
from barrierflow.connectors.source import SourceReader, SourceReaderContext
from barrierflow.functions import Function, KeyedProcessFunction, RuntimeContext
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.state.backend import AsyncSnapshot, RestoreStreams
from barrierflow.state.backends import StateBackendConfig, create_keyed_state_backend
from barrierflow.state.key_groups import key_group_range_for_subtask
from barrierflow.state.operator_state import OperatorStateStore


class UserFunctionError(Exception):
    """User code failed on a record; carries where, and the original exception as cause."""


@dataclass(frozen=True)
class OperatorSpec:
    """What the executor needs to build one operator of a chain (shipped by Spark)."""

    uid: str
    name: str
    kind: TransformationKind
    function: Any
    key_selector: Callable[[Any], Any] | None = None


@dataclass
class OperatorContext:
    subtask: int
    parallelism: int
    max_parallelism: int
    attempt: int
    task_name: str
    checkpointing: bool
    restore: OperatorRestore | None
    restore_streams: RestoreStreams
    state_backend: StateBackendConfig = field(default_factory=StateBackendConfig)
    job_id: str = ""
    job_name: str = ""
    local_dir: str = ""  # this subtask's directory for local state (RocksDB)
    recovery_dir: str | None = None  # where it keeps local copies for local recovery


@dataclass(frozen=True)
class OperatorSnapshot:
    operator_state: bytes | None
    keyed: AsyncSnapshot | None


def _restore_operator_state(store: OperatorStateStore, ctx: OperatorContext) -> None:
    assert ctx.restore is not None
    read = ctx.restore_streams.read
    snapshots = [read(h) if h is not None else None for h in ctx.restore.operator_states]
    store.restore(snapshots, ctx.subtask, ctx.parallelism)


def _describe_record(record: Any) -> str:
    text = repr(record)
    return text if len(text) <= 200 else text[:197] + "..."


class Operator:
    def __init__(self, spec: OperatorSpec) -> None:
        self.uid = spec.uid
        self.name = spec.name
        self.spec = spec
        self._where = spec.uid

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        fn = self.spec.function
        if isinstance(fn, Function):
            fn.open(RuntimeContext(ctx.task_name, ctx.subtask, ctx.parallelism))

    def failure(self, record: Any, error: BaseException, key: Any = None) -> UserFunctionError:
        key_text = f" (key {key!r:.100})" if key is not None else ""
        return UserFunctionError(
            f"{self._where} failed on record {_describe_record(record)}{key_text}: "
            f"{type(error).__name__}: {error}"
        )

    def process_batch(self, records: list[Any]) -> list[Any]:
        raise NotImplementedError

    def finish(self) -> list[Any]:
        """End of input: returns what the operator still buffers."""
        return []

    def snapshot_state(
        self, checkpoint_id: int, options: CheckpointOptions
    ) -> OperatorSnapshot | None:
        """The synchronous phase of a snapshot, on the task thread; ``OperatorSnapshot.keyed``
        is its asynchronous phase. None: nothing to store."""
        return None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        pass

    def close(self) -> None:
        fn = self.spec.function
        if isinstance(fn, Function):
            fn.close()


def _method(fn: Any, name: str) -> Callable[[Any], Any]:
    return getattr(fn, name) if hasattr(fn, name) and callable(getattr(fn, name)) else fn


class MapOperator(Operator):
    def process_batch(self, records: list[Any]) -> list[Any]:
        fn = _method(self.spec.function, "map")
        out: list[Any] = []
        append = out.append
        try:
            for record in records:
                append(fn(record))
        except Exception as e:
            raise self.failure(records[len(out)], e) from e
        return out


class FlatMapOperator(Operator):
    def process_batch(self, records: list[Any]) -> list[Any]:
        fn = _method(self.spec.function, "flat_map")
        out: list[Any] = []
        extend = out.extend
        record = None
        try:
            for record in records:
                result = fn(record)
                if result is not None:
                    extend(result)
        except Exception as e:
            raise self.failure(record, e) from e
        return out


class FilterOperator(Operator):
    def process_batch(self, records: list[Any]) -> list[Any]:
        fn = _method(self.spec.function, "filter")
        out: list[Any] = []
        append = out.append
        record = None
        try:
            for record in records:
                if fn(record):
                    append(record)
        except Exception as e:
            raise self.failure(record, e) from e
        return out


class KeyedProcessOperator(Operator):
    def open(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        kg_range = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism, ctx.subtask)
        self.backend = create_keyed_state_backend(
            ctx.state_backend, ctx.max_parallelism, kg_range, ctx.local_dir, ctx.recovery_dir
        )
        self._recovery_dir = ctx.recovery_dir
        self._input_ended = False
        self._completed_after_end = False
        if ctx.restore is not None:
            self.backend.restore(ctx.restore.keyed_state, ctx.restore_streams)
        fn: KeyedProcessFunction = self.spec.function
        self._ctx = KeyedProcessFunction.Context(self.backend.key_context)
        fn.open(RuntimeContext(ctx.task_name, ctx.subtask, ctx.parallelism, self.backend))

    def process_batch(self, records: list[Any]) -> list[Any]:
        select = self.spec.key_selector
        process = self.spec.function.process_element
        key_context = self.backend.key_context
        ctx = self._ctx
        out: list[Any] = []
        extend = out.extend
        record = None
        try:
            for record in records:
                key_context.key = select(record)
                result = process(record, ctx)
                if result is not None:
                    extend(result)
        except Exception as e:
            raise self.failure(record, e, key_context.key) from e
        return out

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        return OperatorSnapshot(None, self.backend.snapshot(checkpoint_id, options))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.backend.notify_checkpoint_complete(checkpoint_id)
        self._completed_after_end = self._input_ended

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        self.backend.notify_checkpoint_aborted(checkpoint_id, references_released)

    def finish(self) -> list[Any]:
        self._input_ended = True
        return []

    def close(self) -> None:
        super().close()
        self.backend.dispose()
        if self._completed_after_end and self._recovery_dir:
            # A checkpoint completed after this subtask's input ended, so the job is ending
            # normally: a restart, should one come, can download what it needs.
            shutil.rmtree(self._recovery_dir, ignore_errors=True)


class SourceOperator(Operator):
    """Reads splits; its operator state is the position of each split (split state), or, for a
    source that picks its own splits on restore (``assign_splits``), of every split (union)."""

    SPLITS = "splits"

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"source {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self.state = OperatorStateStore()
        source = self.spec.function
        self._union = callable(getattr(source, "assign_splits", None))
        if ctx.restore is not None:
            _restore_operator_state(self.state, ctx)
        if ctx.restore is None:
            splits = source.initial_splits(ctx.subtask, ctx.parallelism)
        elif self._union:
            everyone = self.state.get_union_list_state(self.SPLITS).get()
            splits = source.assign_splits(everyone, ctx.subtask, ctx.parallelism)
        else:
            splits = self.state.get_list_state(self.SPLITS).get()
        self.reader: SourceReader = source.create_reader(
            splits, SourceReaderContext(ctx.job_name, self.uid, ctx.subtask, ctx.parallelism)
        )
        notify = getattr(self.reader, "notify_checkpoint_complete", None)
        self._notify = notify if callable(notify) else None
        self._taken: dict[int, list[dict]] = {}  # checkpoint id -> positions, until complete

    def poll(self, max_records: int) -> list[Any] | None:
        try:
            return self.reader.poll(max_records)
        except Exception as e:
            raise UserFunctionError(f"{self._where} failed to read: {type(e).__name__}: {e}") from e

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        splits = self.reader.snapshot()
        if self._union:
            self.state.get_union_list_state(self.SPLITS).update(splits)
        else:
            self.state.get_list_state(self.SPLITS).update(splits)
        if self._notify is not None:
            self._taken[checkpoint_id] = splits
        return OperatorSnapshot(self.state.snapshot(), None)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Tells a reader that wants to know (Kafka commits offsets to its group) which
        positions a completed checkpoint holds; older pending ones are subsumed."""
        done = [cid for cid in self._taken if cid <= checkpoint_id]
        if done and self._notify is not None:
            self._notify(checkpoint_id, self._taken[max(done)])
        for cid in done:
            del self._taken[cid]

    def close(self) -> None:
        self.reader.close()


class SinkOperator(Operator):
    """Writes through a two-phase-commit writer; its operator state is the uncommitted
    committables of every checkpoint not yet known to be complete. Union state: on restore
    every subtask's writer sees all of them, whatever the new parallelism, and commits them
    (all, idempotently, or its share by a rule every subtask applies alike)."""

    PENDING = "pending-committables"

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"sink {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self._checkpointing = ctx.checkpointing
        self.state = OperatorStateStore()
        self.writer = self.spec.function.create_writer(
            SinkWriterContext(
                ctx.job_id,
                ctx.job_name,
                self.uid,
                ctx.subtask,
                ctx.parallelism,
                ctx.attempt,
                len(ctx.restore.operator_states) if ctx.restore is not None else None,
            )
        )
        restored: list[dict] = []
        if ctx.restore is not None:
            _restore_operator_state(self.state, ctx)
            restored = self.state.get_union_list_state(self.PENDING).get()
        try:
            self.writer.recover(
                [c for entry in restored for c in entry["committables"]], ctx.parallelism
            )
        except BaseException:
            self.writer.close()  # the task never lists an operator whose open failed
            raise
        self._pending: list[dict] = []  # {"checkpoint_id": n, "committables": [...]}

    def process_batch(self, records: list[Any]) -> list[Any]:
        try:
            self.writer.write(records)
        except Exception as e:
            raise UserFunctionError(
                f"{self._where} failed to write: {type(e).__name__}: {e}"
            ) from e
        return []

    def finish(self) -> list[Any]:
        if not self._checkpointing:  # no checkpoint will commit: what savepoints left, and the rest
            pending = [c for p in self._pending for c in p["committables"]]
            self._pending = []
            self.writer.commit(pending + self.writer.prepare_commit(0))
        return []

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        committables = self.writer.prepare_commit(checkpoint_id)
        if committables:
            self._pending.append({"checkpoint_id": checkpoint_id, "committables": committables})
        self.state.get_union_list_state(self.PENDING).update(self._pending)
        return OperatorSnapshot(self.state.snapshot(), None)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        done = [p for p in self._pending if p["checkpoint_id"] <= checkpoint_id]
        if done:
            self.writer.commit([c for p in done for c in p["committables"]])
            self._pending = [p for p in self._pending if p["checkpoint_id"] > checkpoint_id]

    def close(self) -> None:
        self.writer.close()


_OPERATORS = {
    TransformationKind.SOURCE: SourceOperator,
    TransformationKind.MAP: MapOperator,
    TransformationKind.FLAT_MAP: FlatMapOperator,
    TransformationKind.FILTER: FilterOperator,
    TransformationKind.PROCESS: KeyedProcessOperator,
    TransformationKind.SINK: SinkOperator,
}


def create_operator(spec: OperatorSpec) -> Operator:
    return _OPERATORS[spec.kind](spec)
