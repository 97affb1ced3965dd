"""The operators of one subtask and their outputs (Flink's ``OperatorChain``).

The chain owns what happens to a batch once an input handed it over: it runs the batch
through the chained operators (each ``process_batch`` maps a ``RecordBatch`` to one) and
partitions the result over the ``ResultPartition`` of every outgoing edge (side outputs picked
by the edges that select them), counting the records out. It owns event time inside the chain:
which operators assign timestamps and which keep timers, running a watermark through the
operators up to the next timestamp assigner (timers fire, their outputs go on through the rest
of the chain) and then downstream, the periodic watermarks of the assigners and the
processing-time timers. It takes the synchronous phase of every operator's snapshot, tells
them of completed and aborted checkpoints, sends the events the subtask checkpoint coordinator
asks for on every output channel (barriers, priority barriers with the buffers they overtook,
cancel markers), routes operator events to the operator they name, finishes the operators at
the end of input (with what they still buffer) and closes them.

A chain may start with a source operator: it is part of the chain (snapshots, notifications,
close), but batches enter after it, given by the source input that polls it.

**Threading:** the task thread only. **I/O:** only through the output channels' sockets.
**Lifecycle:** ``open`` (outputs connected, operators opened in order, restoring their state)
-> batches, watermarks, timers, snapshots -> ``end_input`` -> ``close`` (operators closed in
reverse order, then the outputs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any

from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.control import messages as msg
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK, MIN_WATERMARK
from barrierflow.graph.transformation import PartitionerSpec
from barrierflow.metrics import MetricRegistry
from barrierflow.protocol.buffer_codec import BufferEncoder
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.frames import ACTIVE, IDLE, WATERMARK, Kind
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.network.output import OutputChannel, ResultPartition
from barrierflow.runtime.operator_factory import converted_type, create_operator
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorEventError,
    OperatorSnapshot,
    OperatorSpec,
)
from barrierflow.runtime.source_operator import SourceOperator
from barrierflow.runtime.subtask_checkpoint_coordinator import OutputKey
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_metrics import TaskIOMetrics
from barrierflow.runtime.task_network import TaskNetwork
from barrierflow.runtime.typed_output import TypedOutput
from barrierflow.state.backends import local_recovery_dir, local_state_name, local_subtask_dir


def _edge_type(last: OperatorSpec, partitioner: PartitionerSpec) -> Any:
    """The declared type the records of an edge were converted to (their buffers then go as
    MessagePack), or None: a side output's records keep their values (their tag declares
    their type)."""
    return None if partitioner.side_output is not None else converted_type(last)


def _context(
    descriptor: TaskDescriptor,
    uid: str,
    restore_streams: StorageRestoreStreams,
    send_to_job_master: Callable[[msg.Message], None],
    user_metrics: MetricRegistry,
) -> OperatorContext:
    """What operator ``uid`` of this subtask opens with."""
    backend, job_id = descriptor.config.state_backend, descriptor.job_id
    name = local_state_name(uid, descriptor.subtask)
    rocksdb = backend.keeps_local_state  # its kind works in local directories (RocksDB)
    return OperatorContext(
        subtask=descriptor.subtask,
        parallelism=descriptor.parallelism,
        max_parallelism=descriptor.config.max_parallelism,
        attempt=descriptor.attempt,
        task_name=descriptor.name,
        checkpointing=descriptor.config.checkpointing,
        restore=descriptor.restore.get(uid) if descriptor.restore is not None else None,
        restore_streams=restore_streams,
        state_backend=backend,
        job_id=job_id,
        job_name=descriptor.job_name,
        local_dir=local_subtask_dir(backend, job_id, name, descriptor.attempt) if rocksdb else "",
        recovery_dir=local_recovery_dir(backend, job_id, name)
        if rocksdb and backend.local_recovery
        else None,
        send_to_job_master=send_to_job_master,
        token=descriptor.token,
        job_parameters=descriptor.config.job_parameters,
        metrics=user_metrics,
        operator_events=lambda payload: send_to_job_master(
            msg.OperatorEventToCoordinator(
                descriptor.attempt, descriptor.vertex, descriptor.subtask, uid, payload
            )
        ),
    )


class OperatorChain:
    def __init__(self, descriptor: TaskDescriptor, metrics: TaskIOMetrics) -> None:
        self._descriptor = descriptor
        self._metrics = metrics
        self.partitions: list[ResultPartition] = []
        # (an operator with a declared output type is wrapped in its TypedOutput)
        self.operators: list[Operator | TypedOutput] = []  # every one, the source (if any) first
        self.source: SourceOperator | None = None
        self._body: list[Operator | TypedOutput] = []  # the operators batches run through
        self._async_ops: list[Operator | TypedOutput] = []  # those that emit asynchronously
        self._watermark_out = MIN_WATERMARK  # the last watermark sent downstream
        self._watermarks_flow = False  # this task sends watermarks (it makes or got some)
        self.keeps_event_time = False  # set when opened, from the operators

    # --- lifecycle ------------------------------------------------------------------------------

    def open(
        self,
        network: TaskNetwork,
        restore_streams: StorageRestoreStreams,
        send_to_job_master: Callable[[msg.Message], None],
        user_metrics: MetricRegistry,
        run_in_task_thread: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """Connects the outputs, then opens the operators in order (each restores its state
        from ``restore_streams``); ``send_to_job_master``: the task's control channel, which
        operators use for what they send the driver (collected records, operator events);
        ``run_in_task_thread``: the task's mailbox, through which an operator that emits
        asynchronously (async I/O) has its outputs taken on the task thread."""
        descriptor, subtask = self._descriptor, self._descriptor.subtask
        side_edges = any(plan.partitioner.side_output is not None for plan in descriptor.outputs)
        for plan in descriptor.outputs:
            channels = [
                OutputChannel(
                    network.output(
                        target.consumer, f"{plan.edge}:{subtask}:{target.channel}".encode()
                    ),
                    descriptor.token,
                    target.channel,
                    # a test's hook, on connections between slots (slot k runs subtasks k)
                    descriptor.config.channel_faults if target.consumer[1] != subtask else None,
                    descriptor.name,
                )
                for target in plan.targets
            ]
            self.partitions.append(
                ResultPartition(
                    plan.partitioner,
                    channels,
                    descriptor.config.buffer_size,
                    descriptor.config.max_parallelism,
                    descriptor.chain[-1].name,
                    drop_side_outputs=side_edges,
                    encoder=BufferEncoder(_edge_type(descriptor.chain[-1], plan.partitioner)),
                    timestamps=plan.timestamps,
                )
            )
        for spec in descriptor.chain:
            op = create_operator(spec)
            ctx = _context(descriptor, spec.uid, restore_streams, send_to_job_master, user_metrics)
            if op.emits_asynchronously and run_in_task_thread is not None:
                ctx.output_ready = partial(run_in_task_thread, partial(self.emit_completed, op))
            op.open(ctx)
            self.operators.append(op)  # listed once open: close() closes what opened
        head = self.operators[0]
        self.source = head if isinstance(head, SourceOperator) else None
        self._open_event_time()

    def _open_event_time(self) -> None:
        body = self._body = self.operators[1:] if self.source is not None else self.operators
        # Watermarks from upstream stop at the first timestamp assigner of the chain (it makes
        # its own).
        self._assigner_at = [i for i, op in enumerate(body) if op.assigns_timestamps]
        self._timer_ops = [(i, op) for i, op in enumerate(body) if op.has_timers]
        # A watermark run also stops after an operator that holds watermarks behind records
        # still in flight (async I/O); that operator lets it go on later (emit_completed).
        self._watermark_stops = sorted(
            {*self._assigner_at, *(i + 1 for i, op in enumerate(body) if op.holds_watermarks)}
        )
        self._async_ops = [op for op in body if op.emits_asynchronously]
        # Whether this task keeps event time: at its end of input it advances its chain to the
        # end of time, firing every event-time timer.
        self.keeps_event_time = bool(self._assigner_at) or any(op.uses_event_time for op in body)
        self._watermarks_flow = bool(self._assigner_at)

    @property
    def has_timers(self) -> bool:
        return bool(self._timer_ops)

    @property
    def assigns_timestamps(self) -> bool:
        return bool(self._assigner_at)

    @property
    def watermarks_per_split(self) -> bool:
        """Whether a timestamp assigner comes right after the source: it keeps a watermark per
        split when the source input's batches say where their records came from
        (``RecordBatch.splits``)."""
        return self.source is not None and self._assigner_at[:1] == [0]

    def close(self, linger_ms: int | None = None) -> None:
        """``linger_ms``: how long the frames still queued on the outputs may take to go out
        (None: the sockets' own setting)."""
        for op in reversed(self.operators):
            with contextlib.suppress(Exception):
                op.close()
        for p in self.partitions:
            p.close(linger_ms)

    # --- records --------------------------------------------------------------------------------

    def process(self, batch: RecordBatch, start: int = 0) -> None:
        """Runs ``batch`` through the operators from ``start`` on and emits what comes out;
        the timestamp column is left out before an operator that needs none."""
        for op in self._body[start:] if start else self._body:
            if op.drops_timestamps and batch.timestamps is not None:
                batch = RecordBatch(batch.values)
            batch = op.process_batch(batch)
            if not batch.values:
                return
        self.emit(batch)

    @property
    def takes_two_inputs(self) -> bool:
        return bool(self._body) and self._body[0].takes_two_inputs

    def process_second_input(self, batch: RecordBatch) -> None:
        """A batch of the second input of a two-input head operator."""
        head = self._body[0]
        if head.drops_timestamps and batch.timestamps is not None:
            batch = RecordBatch(batch.values)
        batch = head.process_batch2(batch)  # type: ignore[union-attr]  # takes_two_inputs
        if batch.values:
            self.process(batch, 1)

    def emit(self, batch: RecordBatch) -> None:
        partitions = self.partitions
        if partitions:
            self._metrics.records_out += len(batch.values)
        for p in partitions:
            p.emit(batch)

    def emit_restored(self, edge: int, batch: RecordBatch, channels: list[int] | None) -> None:
        """``batch`` on job edge ``edge`` alone (restored output channel state), routed by its
        partitioner or to ``channels``."""
        for plan, p in zip(self._descriptor.outputs, self.partitions, strict=True):
            if plan.edge == edge:
                p.emit_restored(batch, channels)
                return
        raise ValueError(f"{self._descriptor.name} has no output edge {edge}")

    # --- event time and timers ------------------------------------------------------------------

    def advance_watermark(self, watermark: int, start: int = 0) -> None:
        """Runs ``watermark`` through the operators from ``start`` up to the next timestamp
        assigner (the end of time through all of them), with what fired timers emit, and
        sends it downstream if it got through the whole chain. Only a task whose input has
        watermarks, or that makes them, sends any: downstream of a task without, a task ends
        its own event time at its end of input."""
        body = self._body
        end = len(body)
        if watermark < MAX_WATERMARK:
            end = next((i for i in self._watermark_stops if i >= start), end)
        batch = EMPTY
        for op in body[start:end]:
            if batch.values:
                batch = op.process_batch(batch)
            fired = op.on_watermark(watermark)
            if fired is not None and fired.values:
                batch = batch.concat(fired)
        if batch.values:
            self.process(batch, end) if end < len(body) else self.emit(batch)
        if end > start and body[end - 1].holds_watermarks and watermark < MAX_WATERMARK:
            self.emit_completed(body[end - 1])  # the watermark goes on if nothing holds it
            return
        if self._watermarks_flow and end == len(body) and watermark > self._watermark_out:
            self._watermark_out = watermark
            self.broadcast_event(Kind.WATERMARK, WATERMARK.pack(watermark))

    def watermarks_arrived(self) -> None:
        """The input got a watermark: from now on this task sends its watermarks on."""
        self._watermarks_flow = True

    def on_input_idleness(self, idle: bool) -> None:
        """The task's input became idle or active; a chain with a timestamp assigner says
        itself whether the task is idle, whatever its input says."""
        if not self._assigner_at:
            self._broadcast_idleness(idle)

    def _broadcast_idleness(self, idle: bool) -> None:
        self.broadcast_event(Kind.WATERMARK_STATUS, IDLE if idle else ACTIVE)

    def emit_periodic_watermarks(self, now_ms: int) -> None:
        last = self._assigner_at[-1]
        for i in self._assigner_at:
            # an operator that assigns_timestamps has it
            watermark, idle = self._body[i].periodic_watermark(now_ms)  # type: ignore[union-attr]
            if idle is not None and i == last:
                self._broadcast_idleness(idle)
            if watermark is not None:
                self.advance_watermark(watermark, i + 1)

    def fire_processing_timers(self, now_ms: int) -> None:
        for i, op in self._timer_ops:
            fired = op.on_processing_time(now_ms)
            if fired is not None and fired.values:
                self.process(fired, i + 1)

    def emit_completed(self, op: Operator | TypedOutput) -> None:
        """On the task thread, when ``op`` (which emits asynchronously) said it has outputs:
        they run through the rest of the chain, and the watermarks it let go on after them."""
        after = self._body.index(op) + 1
        for item in op.take_completed():
            if isinstance(item, RecordBatch):
                self.process(item, after)
            else:
                self.advance_watermark(item, after)

    # --- end of input ---------------------------------------------------------------------------

    def end_input(self) -> None:
        """All input was read: fire every event-time timer, finish every operator and emit
        what they still held."""
        if self.keeps_event_time:
            self.advance_watermark(MAX_WATERMARK)
        batch = EMPTY
        for op in self._body:
            if batch.values:
                batch = op.process_batch(batch)
            rest = op.finish()
            if rest is not None and rest.values:
                batch = batch.concat(rest)
        if batch.values:
            self.emit(batch)

    # --- checkpoints ----------------------------------------------------------------------------

    def snapshot_state(
        self, checkpoint_id: int, options: CheckpointOptions
    ) -> list[tuple[str, OperatorSnapshot | None]]:
        """The synchronous phase of every operator's snapshot, in chain order."""
        return [(op.uid, op.snapshot_state(checkpoint_id, options)) for op in self.operators]

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for op in self.operators:
            op.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int, references_released: bool) -> None:
        for op in self.operators:
            op.notify_checkpoint_aborted(checkpoint_id, references_released)

    # --- operator events ------------------------------------------------------------------------

    def dispatch_operator_event(self, operator_uid: str, payload: bytes) -> None:
        """Hands an event from the JobMaster to the operator ``operator_uid`` of this chain."""
        for op in self.operators:
            if op.uid == operator_uid:
                op.handle_operator_event(payload)
                return
        raise OperatorEventError(
            f"an operator event for operator {operator_uid!r} reached {self._descriptor.name}, "
            f"whose chain holds {[op.uid for op in self.operators]}: the JobMaster addressed the "
            "wrong subtask, or the job's uids changed; check the coordinator's routing"
        )

    # --- outputs --------------------------------------------------------------------------------

    def broadcast_event(
        self, kind: Kind, payload: bytes | None = None, deadline_ns: int | None = None
    ) -> None:
        """Behind every record emitted so far, on every output channel (a barrier with a
        deadline overtakes what is queued once it passed: ``promote_overdue_barriers``)."""
        for p in self.partitions:
            p.broadcast_event(kind, payload, deadline_ns)

    def broadcast_priority_event(self, kind: Kind, payload: bytes) -> dict[OutputKey, list[bytes]]:
        """Ahead of what is queued, on every output channel; returns the buffers overtaken."""
        overtaken: dict[OutputKey, list[bytes]] = {}
        for plan, p in zip(self._descriptor.outputs, self.partitions, strict=True):
            for target, buffers in enumerate(p.broadcast_priority_event(kind, payload)):
                if buffers:
                    overtaken[(plan.edge, target)] = buffers
        return overtaken

    def promote_overdue_barriers(self, now_ns: int) -> list[tuple[OutputKey, bytes, list[bytes]]]:
        """Barriers past their deadline in an output backlog overtake it: each with the
        buffers it overtook."""
        return [
            ((plan.edge, target), payload, overtaken)
            for plan, p in zip(self._descriptor.outputs, self.partitions, strict=True)
            for target, payload, overtaken in p.promote_overdue(now_ns)
        ]

    def output_holds(self, payload: bytes) -> bool:
        """Whether an event still waits in an output backlog."""
        return any(p.holds(payload) for p in self.partitions)

    def flush(self) -> None:
        for p in self.partitions:
            p.flush()

    def backlogged(self) -> bool:
        """Whether an output channel still holds buffers or events it has no credit for (it
        takes the credit that arrived first), or an async operator has its capacity in flight:
        either way the task takes no input until it drains."""
        for op in self._async_ops:
            if op.full:
                return True
        for p in self.partitions:
            if p.backlogged:
                p.receive_credits()
                if p.backlogged:
                    return True
        return False

    def receive_credits(self) -> None:
        """Takes what the consumers sent every output channel: credits, and with buffer
        debloating the buffer sizes they announced, read so even while no channel waits
        for credit."""
        for p in self.partitions:
            p.receive_credits()

    def smallest_buffer_size(self) -> int:
        """The fewest records any consumer asked a buffer to hold: with buffer debloating, at
        most what a source polls at once, so that one poll does not put more in flight than
        a slow consumer asked for."""
        configured = self._descriptor.config.buffer_size
        return min((p.smallest_size for p in self.partitions), default=configured)

    def output_sockets(self) -> list:
        return [c.socket for p in self.partitions for c in p.channels]
