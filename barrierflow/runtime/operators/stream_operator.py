"""The operator contract: what a chain runs, a batch of records at a time, and what every
operator gets (its spec, its context, the snapshot it returns).

An operator takes the records of one buffer as a ``RecordBatch`` and returns its outputs as
one, which is faster in Python than pushing records one by one through the chain. Once a stream
has event time, the batch has a timestamp column, which one method carries to the outputs
(``process_batch``); the bookkeeping it needs runs only when the column is there, so a job
without event time pays nothing for it. Watermarks and processing time reach the operators
that keep timers between buffers (``on_watermark``, ``on_processing_time``), on the task
thread, never while a buffer is being processed. A failure in user code is raised as
``UserFunctionError`` naming the operator, the subtask, the record (and key), with the
original exception chained.

The operators themselves live beside this module, by kind: ``stateless.py``,
``timestamps_and_watermarks.py``, ``keyed.py``, ``window_operator.py``.

**Threading:** the task thread only, except ``OperatorSnapshot.keyed`` (background) and
``OperatorSnapshot.awaited`` (done on any thread).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.control import messages as msg
from barrierflow.datastream.functions.one_input import Function, RuntimeContext
from barrierflow.datastream.output_tag import DeadLetter, OutputTag, SideOutput
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.graph.timestamp_use import TimestampColumn
from barrierflow.graph.transformation import TransformationKind
from barrierflow.metrics import MetricRegistry
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import RecordBatch, repeat_per_output
from barrierflow.state.backend import AsyncSnapshot, RestoreStreams
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.operator_state import OperatorStateStore


class UserFunctionError(Exception):
    """User code failed on a record; carries where, and the original exception as cause.
    ``operator``, ``exception_type`` and ``record`` tell one failure from another: the
    JobMaster stops restarting a job that fails the same way again and again (a poison
    record)."""

    def __init__(
        self, message: str, operator: str = "", exception_type: str = "", record: str = ""
    ) -> None:
        super().__init__(message)
        self.operator = operator
        self.exception_type = exception_type
        self.record = record


class NotADeadLetter(Exception):
    """An error about how the job is built, not about the record it was found on: dead-letter
    mode fails the job on it rather than set the record aside. ``key``: the record's, which
    the operator had not made current yet."""

    def __init__(self, message: str, key: Any = None) -> None:
        super().__init__(message)
        self.key = key


class OperatorEventError(Exception):
    """An operator event reached an operator that takes none, or that failed on it."""


def dead_letter(record: Any, failure: UserFunctionError) -> DeadLetter:
    cause = failure.__cause__ or failure
    return DeadLetter(record, failure.operator, f"{type(cause).__name__}: {cause}")


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
    # the side output (tag id) records its function fails on go to; None: they fail the job
    dead_letters: str | None = None
    # its input was reinterpreted as keyed: each record's key group is checked to be its own
    checks_key_groups: bool = False


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
    # What the acknowledgement waits for besides the state written: a sink's records still on
    # their way to its system (``SinkWriter.flushing``); failed, it declines the checkpoint.
    awaited: Future[None] | None = None


def restore_operator_state(store: OperatorStateStore, ctx: OperatorContext) -> None:
    assert ctx.restore is not None
    read = ctx.restore_streams.read
    snapshots = [read(h) if h is not None else None for h in ctx.restore.operator_states]
    store.restore(snapshots, ctx.subtask, ctx.parallelism)


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
        self.dead_letters: str | None = None  # set at open (``open_dead_letters``)

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"operator {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self.open_dead_letters(ctx)
        fn = self.spec.function
        if isinstance(fn, Function):
            fn.open(ctx.runtime_context(self.name))

    def failure(self, record: Any, error: BaseException, key: Any = None) -> UserFunctionError:
        if isinstance(error, NotADeadLetter) and error.key is not None:
            key = error.key
        key_text = f" (key {key!r:.100})" if key is not None else ""
        described = _describe_record(record)
        return UserFunctionError(
            f"{self._where} failed on record {described}{key_text}: "
            f"{type(error).__name__}: {error}",
            operator=f"'{self.uid}' ({self.name})",
            exception_type=type(error).__name__,
            record=described,
        )

    def open_dead_letters(self, ctx: OperatorContext) -> None:
        """Dead-letter mode (``with_dead_letters``): the operator counts what it routes there
        (``numRecordsDeadLettered``, served at /metrics)."""
        self.dead_letters = self.spec.dead_letters
        if self.dead_letters is not None:
            group = ctx.runtime_context(self.name).get_metrics_group()
            self._dead_lettered = group.counter("numRecordsDeadLettered")

    def each_record(
        self, batch: RecordBatch, process: Callable[[RecordBatch], RecordBatch]
    ) -> RecordBatch:
        """Dead-letter mode: ``process`` on one record at a time, so that a record the function
        fails on goes to the dead letters (with its timestamp) while the others go on. Slower
        than a batch at once, and only for operators asked to. What the function did to keyed
        state before it raised stays done."""
        values: list[Any] = []
        stamps = batch.timestamps
        out_stamps: list[int] | None = None if stamps is None else []
        tag = self.dead_letters
        assert tag is not None  # dead-letter mode
        for i, record in enumerate(batch.values):
            one = RecordBatch([record], None if stamps is None else [stamps[i]])
            try:
                done = process(one)
            except UserFunctionError as e:
                if isinstance(e.__cause__, NotADeadLetter):
                    raise
                values.append(SideOutput(tag, dead_letter(record, e)))
                if out_stamps is not None and stamps is not None:  # (both or neither)
                    out_stamps.append(stamps[i])
                self._dead_lettered.inc()
                continue
            values.extend(done.values)
            if out_stamps is not None and stamps is not None:
                out_stamps.extend(done.timestamps or [stamps[i]] * len(done.values))
        return RecordBatch(values, out_stamps)

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        """The outputs of a batch of records. Timestamps, where the batch has them, follow
        the records to their outputs. An operator that calls its function record by record
        implements ``_process_all`` instead, and so can set a failing record aside as a dead
        letter (``each_record``); one that overrides this cannot."""
        if self.dead_letters is not None:
            return self.each_record(batch, self._process_all)
        return self._process_all(batch)

    def _process_all(self, batch: RecordBatch) -> RecordBatch:
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
        out_ts: list[int] | None = None
        if timestamps is not None:
            assert ends is not None  # given with the timestamps
            out_ts = repeat_per_output(timestamps, ends)
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
