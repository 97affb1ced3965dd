"""Stream operators: what a chain runs, a batch of records at a time.

An operator takes the records of one buffer as a ``RecordBatch`` and returns its outputs as
one, which is faster in Python than pushing records one by one through the chain. Once a stream
has event time, the batch has a timestamp column, which one method carries to the outputs
(``process_batch``); the bookkeeping it needs runs only when the column is there, so a job
without event time pays nothing for it. Watermarks and processing time reach
the operators that keep timers between buffers (``on_watermark``, ``on_processing_time``), on
the task thread, never while a buffer is being processed. A failure in user code is raised
as ``UserFunctionError`` naming the operator, the subtask, the record (and key), with the
original exception chained.

**Threading:** the task thread only, except ``OperatorSnapshot.keyed`` (background).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.control import messages as msg
from barrierflow.datastream.functions.one_input import (
    Function,
    KeyedProcessFunction,
    ProcessFunction,
    RuntimeContext,
    TimeDomain,
)
from barrierflow.datastream.output_tag import OutputTag, SideOutput
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.eventtime.watermark_strategy import (
    TimestampAssigner,
    WatermarkGenerator,
    WatermarkStrategy,
)
from barrierflow.eventtime.watermark_valve import MIN_WATERMARK
from barrierflow.graph.timestamp_use import TimestampColumn
from barrierflow.graph.transformation import TransformationKind
from barrierflow.metrics import MetricRegistry
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import RecordBatch, repeat_per_output
from barrierflow.runtime.timer_service import InternalTimerService
from barrierflow.state.backend import AsyncSnapshot, RestoreStreams
from barrierflow.state.backends import StateBackendConfig, create_keyed_state_backend
from barrierflow.state.key_groups import key_group_range_for_subtask
from barrierflow.state.keyed_state_store import KeyedStateStore
from barrierflow.state.operator_state import OperatorStateStore


class UserFunctionError(Exception):
    """User code failed on a record; carries where, and the original exception as cause."""


class OperatorEventError(Exception):
    """An operator event reached an operator that takes none, or that failed on it."""


@dataclass(frozen=True)
class OperatorSpec:
    """What the executor needs to build one operator of a chain (shipped by Spark)."""

    uid: str
    name: str
    kind: TransformationKind
    function: Any
    key_selector: Callable[[Any], Any] | None = None
    side_outputs: frozenset[str] = frozenset()  # tags someone consumes: the others are dropped
    output_type: Any = None  # a declared TypeInformation: results are converted to it
    key_selector2: Callable[[Any], Any] | None = None  # a two-input operator's, of input 2
    # NEEDED: it reads its input's timestamp column, or carries it to outputs that need it
    input_timestamps: TimestampColumn = TimestampColumn.NEEDED


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
    # The task's control channel, for what an operator sends the driver (collected records),
    # and the attempt's token, which the driver checks before it unpickles what it receives.
    send_to_job_master: Callable[[msg.Message], None] | None = None
    token: int = 0
    job_parameters: dict[str, str] = field(default_factory=dict)
    metrics: MetricRegistry | None = None  # the subtask's user metrics
    # Sends an operator event to this operator's coordinator on the JobMaster (set by the task)
    operator_events: Callable[[bytes], None] | None = None
    # An operator that emits asynchronously calls it, from any thread, when it has outputs:
    # the chain then takes them on the task thread (``take_completed``; set by the chain)
    output_ready: Callable[[], None] | None = None

    def send_operator_event(self, payload: bytes) -> None:
        """Sends ``payload`` to this operator's coordinator on the JobMaster (a source reader
        to its split enumerator), in order with what the task sends it otherwise."""
        if self.operator_events is None:
            raise OperatorEventError(
                f"{self.task_name} has no JobMaster to send an operator event to (an operator "
                "run alone, as in a test harness); give the context an operator_events sender"
            )
        self.operator_events(payload)

    def runtime_context(self, operator: str, keyed_backend: Any = None) -> RuntimeContext:
        """What a user function's ``open`` gets, for the operator named ``operator``."""
        return RuntimeContext(
            self.task_name,
            self.subtask,
            self.parallelism,
            keyed_backend,
            max_parallelism=self.max_parallelism,
            attempt_number=self.attempt - 1,
            job_parameters=self.job_parameters,
            metrics=(self.metrics or MetricRegistry()).group(operator),
        )


@dataclass(frozen=True)
class OperatorSnapshot:
    operator_state: bytes | None
    keyed: AsyncSnapshot | None


def restore_operator_state(store: OperatorStateStore, ctx: OperatorContext) -> None:
    assert ctx.restore is not None
    read = ctx.restore_streams.read
    snapshots = [read(h) if h is not None else None for h in ctx.restore.operator_states]
    store.restore(snapshots, ctx.subtask, ctx.parallelism)


_NONE = repeat(None)  # the timestamps of a batch without them, to zip with its records


def _describe_record(record: Any) -> str:
    text = repr(record)
    return text if len(text) <= 200 else text[:197] + "..."


class Operator:
    takes_two_inputs = False  # a TwoInputOperator: batches of input 2 go to process_batch2
    assigns_timestamps = False  # a TimestampsAndWatermarksOperator: event time starts here
    uses_event_time = False  # keeps event-time timers: the end of input fires them
    has_timers = False  # on_watermark / on_processing_time may return records
    emits_asynchronously = False  # outputs come later, through take_completed (async I/O)
    holds_watermarks = False  # a watermark waits in it behind records and leaves later
    full = False  # at its capacity: the task takes no input until it has room (async I/O)

    def __init__(self, spec: OperatorSpec) -> None:
        self.uid = spec.uid
        self.name = spec.name
        self.spec = spec
        self._where = spec.uid
        # no one downstream reads the timestamps of its input: the chain drops them before it
        self.drops_timestamps = spec.input_timestamps is TimestampColumn.DROPPED

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        fn = self.spec.function
        if isinstance(fn, Function):
            fn.open(ctx.runtime_context(self.name))

    def failure(self, record: Any, error: BaseException, key: Any = None) -> UserFunctionError:
        key_text = f" (key {key!r:.100})" if key is not None else ""
        return UserFunctionError(
            f"{self._where} failed on record {_describe_record(record)}{key_text}: "
            f"{type(error).__name__}: {error}"
        )

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        """The outputs of a batch of records. Timestamps, where the batch has them, follow
        the records to their outputs."""
        raise NotImplementedError

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        """The event time advanced to ``watermark``: what fired timers emit."""
        return None

    def _finished_batch(
        self, ctx: Any, out: list[Any], timestamps: list[int] | None, ends: list[int] | None
    ) -> RecordBatch:
        """The outputs of a batch: ``out`` (output *j* came from the input whose ``ends``
        entry first exceeds *j*), what the function sent to side outputs (``ctx.output``)
        after them, and side output pairs it yielded turned into side output records."""
        out_ts = None if timestamps is None else repeat_per_output(timestamps, ends)
        side = ctx._side
        if side:
            out.extend(record for record, _ in side)
            if out_ts is not None:
                out_ts = out_ts + [NO_TIMESTAMP if t is None else t for _, t in side]
            side.clear()
        return self._yielded_side_outputs(RecordBatch(out, out_ts))

    def _yielded_side_outputs(self, batch: RecordBatch) -> RecordBatch:
        """PyFlink's way to a side output, ``yield output_tag, value``: such pairs become side
        output records (dropped when no one consumes the tag)."""
        out = batch.values
        if not OutputTag.made or OutputTag not in {
            type(r[0]) for r in out if type(r) is tuple and r
        }:
            return batch  # the common case: no tag in this process, or none in the batch
        consumed = self.spec.side_outputs
        kept: list[Any] = []
        flags: list[bool] = []
        for r in out:
            if type(r) is tuple and len(r) == 2 and type(r[0]) is OutputTag:
                if r[0].tag_id not in consumed:
                    flags.append(False)
                    continue
                r = SideOutput(r[0].tag_id, r[1])
            kept.append(r)
            flags.append(True)
        ts = batch.timestamps
        return RecordBatch(kept, None if ts is None else list(compress(ts, flags)))

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        """What processing-time timers due at ``now_ms`` emit."""
        return None

    def finish(self) -> RecordBatch | None:
        """End of input: what the operator still buffers."""
        return None

    def take_completed(self) -> list[RecordBatch | int]:
        """An operator that emits asynchronously: what may be emitted now, in order, batches
        of records and the watermarks between them (on the task thread)."""
        return []

    def handle_operator_event(self, payload: bytes) -> None:
        """An event the JobMaster sent this operator (a split enumerator's to its reader).
        Operators that talk to a coordinator override this."""
        raise OperatorEventError(
            f"{self._where} got an operator event ({len(payload)} bytes) but takes none: the "
            "coordinator that sent it expects another operator under this uid; check that "
            "the job's operator uids match the running job's"
        )

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


class TwoInputOperator(Operator):
    """An operator with two inputs (Flink's ``TwoInputStreamOperator``): ``process_batch``
    takes the batches of input 1, ``process_batch2`` those of input 2; the task's watermark is
    the minimum of the two inputs'."""

    takes_two_inputs = True

    def process_batch2(self, batch: RecordBatch) -> RecordBatch:
        raise NotImplementedError


def _method(fn: Any, name: str) -> Callable[[Any], Any]:
    return getattr(fn, name) if hasattr(fn, name) and callable(getattr(fn, name)) else fn


class MapOperator(Operator):
    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        fn = _method(self.spec.function, "map")
        records = batch.values
        out: list[Any] = []
        append = out.append
        try:
            for record in records:
                append(fn(record))
        except Exception as e:
            raise self.failure(records[len(out)], e) from e
        return RecordBatch(out, batch.timestamps)  # one output per input: the same column


class FlatMapOperator(Operator):
    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        fn = _method(self.spec.function, "flat_map")
        timestamps = batch.timestamps
        timed = timestamps is not None
        out: list[Any] = []
        extend = out.extend
        ends: list[int] = []  # with timestamps: where each input's outputs end
        mark = ends.append
        record = None
        try:
            for record in batch.values:
                result = fn(record)
                if result is not None:
                    extend(result)
                if timed:
                    mark(len(out))
        except Exception as e:
            raise self.failure(record, e) from e
        return RecordBatch(out, repeat_per_output(timestamps, ends) if timed else None)


class FilterOperator(Operator):
    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        fn = _method(self.spec.function, "filter")
        records = batch.values
        kept: list[Any] = []
        append = kept.append
        try:
            for record in records:
                append(fn(record))
        except Exception as e:
            raise self.failure(records[len(kept)], e) from e
        return batch.compress(kept)


class ProcessOperator(Operator):
    """A ``ProcessFunction`` on a stream that is not keyed: no state, no timers."""

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        self._ctx = ProcessFunction.Context(None, None, self.spec.side_outputs)

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        return self._process(batch, self.spec.function.process_element, self._ctx)

    def _process(
        self, batch: RecordBatch, process: Callable[[Any, Any], Any], ctx: Any
    ) -> RecordBatch:
        """``process(record, ctx)`` for each record (a two-input operator's per input)."""
        timestamps = batch.timestamps
        timed = timestamps is not None
        out: list[Any] = []
        extend = out.extend
        ends: list[int] = []
        mark = ends.append
        record = None
        try:
            # ctx.timestamp() is the record's, or None on a stream without event time
            stamps = timestamps if timed else _NONE
            for record, ctx._timestamp in zip(batch.values, stamps, strict=False):
                result = process(record, ctx)
                if result is not None:
                    extend(result)
                if timed:
                    mark(len(out))
        except Exception as e:
            raise self.failure(record, e) from e
        return self._finished_batch(ctx, out, timestamps, ends)


class TimestampsAndWatermarksOperator(Operator):
    """Gives records their event timestamps by a ``WatermarkStrategy`` and generates the
    watermarks of this subtask (``periodic_watermark``, every ``pipeline.auto-watermark-
    interval``). After a source (``from_source(source, strategy, name)``) it runs in the
    source's task; after any other operator (``assign_timestamps_and_watermarks``), watermarks
    from upstream stop here, as in Flink, but the end of input passes.

    Right after a source whose reader says which split each record came from
    (``last_poll_splits``), the task hands it each batch's ``split_runs``: then each split has
    its own generator, and the subtask's watermark is the minimum over its active splits (an
    idle split left out), as Flink's sources make it; a split that reached its end is released
    (``release_splits``) and no longer holds the watermark back. With no split left, the
    watermark stays where the last ones took it until a new split brings records, and with
    ``with_idleness`` the subtask goes idle once the idle timeout passed since the last one
    ended (Flink's goes idle at once; waiting keeps the records of a file read next from being
    late when the others' watermarks ran ahead in between). Otherwise one generator serves the
    subtask."""

    assigns_timestamps = True

    def open(self, ctx: OperatorContext) -> None:
        super().open(ctx)
        strategy: WatermarkStrategy = self.spec.function
        self._strategy = strategy
        assigner = strategy.timestamp_assigner
        # Looked up once: the strategy's extract_timestamp would ask for every record.
        self._assigner: Callable[[Any, int], int] | None = (
            assigner.extract_timestamp if isinstance(assigner, TimestampAssigner) else assigner
        )
        self._generator: WatermarkGenerator | None = strategy.create_generator()
        self._split_generators: dict[str, WatermarkGenerator] = {}
        self._per_split = False  # once a batch came with its splits
        self._released_watermark = MIN_WATERMARK  # of splits ended since the last emit
        self._released_at_ms = 0  # when the last split left ended
        self.split_runs: list[tuple[str, int]] | None = None  # of the batch about to come
        self._now_ms = 0
        self._idle_reported = False
        self.watermark = MIN_WATERMARK

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        records = batch.values
        timestamps = batch.timestamps
        if self._assigner is not None:
            previous = repeat(NO_TIMESTAMP) if timestamps is None else timestamps
            try:
                timestamps = list(map(self._assigner, records, previous))
            except Exception:  # noqa: BLE001 - raised again, naming the record
                timestamps = self._extract_one_by_one(records, previous)
        elif timestamps is None:
            timestamps = [NO_TIMESTAMP] * len(records)
        if not timestamps:
            return RecordBatch(records, timestamps)
        try:
            highest = max(timestamps)
        except TypeError:  # not all numbers
            highest = None
        if type(highest) is not int or type(timestamps[0]) is not int:
            # A cheap look (the highest and the first), not a check of every record.
            for record, timestamp in zip(records, timestamps, strict=True):
                if type(timestamp) is not int:
                    raise self.failure(record, TypeError(
                        "the timestamp assigner must return epoch milliseconds as an int, "
                        f"not {type(timestamp).__name__} {timestamp!r:.50}"))  # fmt: skip
        runs, self.split_runs = self.split_runs, None
        if self._generator is None:
            pass
        elif runs is None:
            self._generator.on_event(highest, self._now_ms)
        else:
            self._per_split = True
            at = 0
            for split, n in runs:
                generator = self._split_generators.get(split)
                if generator is None:
                    generator = self._split_generators[split] = self._strategy.create_generator()
                generator.on_event(max(timestamps[at : at + n]), self._now_ms)
                at += n
        return RecordBatch(records, timestamps)

    def _extract_one_by_one(self, records: list[Any], previous: Any) -> list[int]:
        """Again, record by record, to name the record the assigner failed on."""
        assigned: list[int] = []
        record = None
        try:
            # ``previous`` may be an endless repeat of NO_TIMESTAMP
            for record, timestamp in zip(records, previous, strict=False):
                assigned.append(self._assigner(record, timestamp))
        except Exception as e:
            raise self.failure(record, e) from e
        return assigned

    def release_splits(self, splits: list[str]) -> None:
        """``splits`` reached their end: their watermarks stop counting. Where none is left,
        the subtask's watermark still advances to what the last of them reached."""
        for split in splits:
            generator = self._split_generators.pop(split, None)
            if generator is not None:
                last = generator.on_periodic_emit(self._now_ms)
                self._released_watermark = max(self._released_watermark, last)
        if not self._split_generators:
            self._released_at_ms = self._now_ms

    def periodic_watermark(self, now_ms: int) -> tuple[int | None, bool | None]:
        """(a watermark above the last one, or None; True/False when the subtask became idle
        or active again since the last call, else None)."""
        self._now_ms = now_ms
        if self._generator is None:
            return None, None
        if self._per_split:
            marks = [(g.on_periodic_emit(now_ms), g.idle) for g in self._split_generators.values()]
            active = [watermark for watermark, idle in marks if not idle]
            watermark = min(active) if active else None
            idle = not active
            if not marks:  # every split ended: idle once the idle timeout passed since
                watermark = self._released_watermark
                timeout = self._strategy.idle_timeout_ms
                idle = self._idle_reported or (
                    timeout is not None and now_ms - self._released_at_ms >= timeout
                )
            self._released_watermark = MIN_WATERMARK
        else:
            watermark = self._generator.on_periodic_emit(now_ms)
            idle = self._generator.idle
        status = None
        if idle != self._idle_reported:
            self._idle_reported = status = idle
        if watermark is not None and watermark > self.watermark:
            self.watermark = watermark
            return watermark, status
        return None, status


class KeyedOperator(Operator):
    """An operator with keyed state and timers: its key groups' state in the configured
    backend, restored (timers included) before the user's ``open`` sees it."""

    uses_event_time = True
    has_timers = True

    def open_keyed(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        kg_range = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism, ctx.subtask)
        self.backend = create_keyed_state_backend(
            ctx.state_backend, ctx.max_parallelism, kg_range, ctx.local_dir, ctx.recovery_dir
        )
        self._recovery_dir = ctx.recovery_dir
        self._input_ended = False
        self._completed_after_end = False
        self.timers = InternalTimerService(self.backend, ctx.max_parallelism)
        if ctx.restore is not None:
            self.backend.restore(ctx.restore.keyed_state, ctx.restore_streams)
            self.timers.restore()

    def runtime_context(self, ctx: OperatorContext) -> RuntimeContext:
        """The user functions' context: the keyed state of this subtask."""
        store = KeyedStateStore(self.backend, where=self._where)
        return ctx.runtime_context(self.name, store)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        return OperatorSnapshot(None, self.backend.snapshot(checkpoint_id, options))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.backend.notify_checkpoint_complete(checkpoint_id)
        self._completed_after_end = self._input_ended

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        self.backend.notify_checkpoint_aborted(checkpoint_id, references_released)

    def finish(self) -> RecordBatch | None:
        self._input_ended = True
        return None

    def close(self) -> None:
        super().close()
        self.backend.dispose()
        if self._completed_after_end and self._recovery_dir:
            # A checkpoint completed after this subtask's input ended, so the job is ending
            # normally: a restart, should one come, can download what it needs.
            shutil.rmtree(self._recovery_dir, ignore_errors=True)


class KeyedProcessOperator(KeyedOperator):
    def open(self, ctx: OperatorContext) -> None:
        self.open_keyed(ctx)
        fn: KeyedProcessFunction = self.spec.function
        side_outputs = self.spec.side_outputs
        self._ctx = KeyedProcessFunction.Context(
            self.backend.key_context, self.timers, side_outputs
        )
        self._timer_ctx = KeyedProcessFunction.OnTimerContext(
            self.backend.key_context, self.timers, side_outputs
        )
        self._on_timer = getattr(fn, "on_timer", None)
        # barrierflow's own reductions yield no side outputs: they skip the look for them
        self._tags = getattr(fn, "yields_side_outputs", True)
        fn.open(self.runtime_context(ctx))

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        fn = self.spec.function
        return self._process_keyed(batch, self.spec.key_selector, fn.process_element, self._ctx)

    def _process_keyed(
        self,
        batch: RecordBatch,
        select: Callable[[Any], Any],
        process: Callable[[Any, Any], Any],
        ctx: Any,
    ) -> RecordBatch:
        """``process(record, ctx)`` for each record, with its key (by ``select``) current (a
        two-input operator's per input)."""
        key_context = self.backend.key_context
        timestamps = batch.timestamps
        out: list[Any] = []
        extend = out.extend
        ends: list[int] = []
        record = None
        try:
            if timestamps is None:  # the hot loop of keyed jobs: nothing for the column
                for record in batch.values:
                    key_context.key = select(record)
                    result = process(record, ctx)
                    if result is not None:
                        extend(result)
            else:
                mark = ends.append
                for record, ctx._timestamp in zip(batch.values, timestamps, strict=True):
                    key_context.key = select(record)
                    result = process(record, ctx)
                    if result is not None:
                        extend(result)
                    mark(len(out))
        except Exception as e:
            raise self.failure(record, e, key_context.key) from e
        if not self._tags and not ctx._side:
            if timestamps is None:
                return RecordBatch(out)
            return RecordBatch(out, repeat_per_output(timestamps, ends))
        return self._finished_batch(ctx, out, timestamps, ends)

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        if watermark <= self.timers.watermark:
            return None
        return self._fire(self.timers.advance_watermark(watermark), TimeDomain.EVENT_TIME)

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        due = self.timers.next_processing_time()
        if due is None or due > now_ms:
            return None
        return self._fire(self.timers.fire_processing_time(now_ms), TimeDomain.PROCESSING_TIME)

    def _fire(self, timers, domain: TimeDomain) -> RecordBatch:
        """Calls ``on_timer`` for each due timer; event-time outputs carry the timer's time,
        processing-time outputs none."""
        ctx = self._timer_ctx
        ctx._time_domain = domain
        on_timer = self._on_timer
        event_time = domain is TimeDomain.EVENT_TIME
        out: list[Any] = []
        ends: list[int] = []
        stamps: list[int] = []
        timer = None
        try:
            for timer in timers:
                ctx._timestamp = timer.timestamp
                result = on_timer(timer.timestamp, ctx) if on_timer is not None else None
                if result is not None:
                    out.extend(result)
                ends.append(len(out))
                stamps.append(timer.timestamp)
        except Exception as e:
            raise UserFunctionError(
                f"{self._where} failed in on_timer({timer.timestamp}) "
                f"({domain.name.lower().replace('_', ' ')} timer) of key {timer.key!r:.100}: "
                f"{type(e).__name__}: {e}"
            ) from e
        return self._finished_batch(ctx, out, stamps if event_time else None, ends)
