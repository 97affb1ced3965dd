"""The checkpointing of one subtask (Flink's SubtaskCheckpointCoordinator).

It owns the barrier handler of the task's input gate and carries out what the handler decides:
blocks and unblocks channels (through the task's input), takes the snapshot of the operator
chain, forwards barriers and cancel markers on the chain's outputs, records channel state, and
acknowledges or declines to the JobMaster. Of the task itself it needs two things only
(``TaskServices``): a way to the JobMaster and a way back onto the task thread. A snapshot has
two phases:

1. synchronous, on the task thread between two buffers (or, when unaligned, between two chunks
   of one): every operator of the chain snapshots its state with the checkpoint's options (a
   copy-on-write view, a RocksDB flush), then the barrier goes downstream: behind every record
   emitted before it (aligned), or ahead of them as a priority event (unaligned: the buffers it
   overtook become output channel state);
2. asynchronous, on the slot's snapshot pool: the state is written to checkpoint storage;
   meanwhile what an operator's snapshot awaits (a sink's records still on their way to its
   system, ``OperatorSnapshot.awaited``) arrives, on whatever thread delivers it.

An unaligned checkpoint also records the data in flight (``ChannelStateCapture``) until every
input channel delivered its barrier and every output channel sent it; that too is written on
the pool. The acknowledgement is sent, from the task thread, once all of it is done. A
checkpoint the coordinator aborts meanwhile stops writing and deletes what it wrote. A
savepoint's files go to its own directory (``CheckpointOptions.target_location``). After the
barrier of a *suspend* savepoint (stop) the task's sources read nothing more, until it
completes (the task then ends) or is aborted (they read on).

**Threading:** every method on the task thread, except the writing (the pool).
**I/O:** checkpoint storage, in the writing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Protocol

from barrierflow.checkpoint.barrier_handler import (
    Action,
    AtLeastOnceBarrierHandler,
    BlockChannel,
    CaptureChannels,
    Decline,
    EndChannelCapture,
    ExactlyOnceBarrierHandler,
    InputStateComplete,
    SnapshotNow,
    UnblockAll,
)
from barrierflow.checkpoint.channel_state import ChannelStateCapture, encode_channel_state
from barrierflow.checkpoint.metadata import (
    OperatorSubtaskState,
    StreamHandle,
    SubtaskCheckpointStats,
)
from barrierflow.checkpoint.state_streams import CheckpointAbortedError, CheckpointStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg
from barrierflow.protocol.buffer_codec import BufferEncoder
from barrierflow.protocol.checkpoint_barrier import (
    Alignment,
    CheckpointBarrier,
    CheckpointOptions,
    DeclineReason,
)
from barrierflow.protocol.frames import CHECKPOINT_ID, Kind, encode_barrier
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators import OperatorSnapshot
from barrierflow.runtime.task_descriptor import TaskDescriptor

OutputKey = tuple[int, int]  # (job edge, consumer index)
_UNTYPED = BufferEncoder(None)  # the rest of a buffer, recorded as channel state


class TaskServices(Protocol):
    """What the coordinator needs of its task itself."""

    def send_to_job_master(self, message: msg.Message) -> None:
        """On the task thread."""

    def run_in_task_thread(self, mail: Callable[[], None]) -> None:
        """From any thread: run ``mail`` on the task thread, between buffers."""


class CheckpointedChain(Protocol):
    """What the coordinator needs of the operator chain (``OperatorChain``), on the task
    thread."""

    def snapshot_state(
        self, checkpoint_id: int, options: CheckpointOptions
    ) -> list[tuple[str, OperatorSnapshot | None]]: ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def notify_checkpoint_aborted(self, checkpoint_id: int, references_released: bool) -> None: ...

    def broadcast_event(
        self, kind: Kind, payload: bytes | None = None, deadline_ns: int | None = None
    ) -> None: ...

    def broadcast_priority_event(
        self, kind: Kind, payload: bytes
    ) -> dict[OutputKey, list[bytes]]: ...

    def promote_overdue_barriers(
        self, now_ns: int
    ) -> list[tuple[OutputKey, bytes, list[bytes]]]: ...

    def output_holds(self, payload: bytes) -> bool: ...


class CheckpointedInput(Protocol):
    """What the coordinator needs of the task's input (``NetworkInput``), on the task
    thread."""

    def block_channel(self, channel: int) -> None: ...

    def unblock_all_channels(self) -> None: ...

    def overtake_barriers(self, checkpoint_id: int) -> None: ...

    def unprocessed_input(self) -> tuple[int, RecordBatch] | None: ...


@dataclass
class _Snapshot:
    """A checkpoint this subtask snapshotted and has not acknowledged yet."""

    barrier: CheckpointBarrier
    sync_ms: float
    alignment_ms: float
    processed_data: int
    start_delay_ms: float
    unaligned: bool
    capture: ChannelStateCapture | None
    written: list[CheckpointStreams] = field(default_factory=list)
    operator_states: dict[str, OperatorSubtaskState] | None = None
    async_ms: float = 0.0
    channel_state: StreamHandle | None = None
    channel_state_written: bool = False
    timed_barrier: bytes | None = None  # an aligned barrier that may still be promoted
    awaiting: int = 0  # what operators' snapshots await that is not done yet


class SubtaskCheckpointCoordinator:
    def __init__(
        self,
        descriptor: TaskDescriptor,
        task: TaskServices,
        chain: CheckpointedChain,
        snapshot_pool: Executor,
    ) -> None:
        """The task's input is attached once it is made (``attach_input``): it needs this
        coordinator first."""
        config = descriptor.config
        channels = descriptor.num_input_channels
        self._descriptor = descriptor
        self._task = task
        self._chain = chain
        self._input: CheckpointedInput | None = None
        self._pool = snapshot_pool
        self._handler = (
            ExactlyOnceBarrierHandler(channels)
            if config.exactly_once
            else AtLeastOnceBarrierHandler(channels)
        )
        self._storage = (
            CheckpointDirectory(config.storage_uri, config.write_buffer_size)
            if config.storage_uri
            else None
        )
        self._processed_data = 0
        self._first_barrier_ms: dict[int, float] = {}
        self._aborted: set[int] = set()  # written by the task thread only
        self._snapshots: dict[int, _Snapshot] = {}
        self._capture: ChannelStateCapture | None = None  # the one recording input now
        self._buffers_before: list[bytes] = []  # of the priority barrier being handled
        self._final_checkpoint_id: int | None = None  # the first final barrier seen here
        self.final_checkpoint_completed = False
        self._stopping_at: int | None = None  # a suspend savepoint taken here, still pending
        self.stop_completed = False  # a suspend savepoint completed: the task ends
        self.recording: set[int] = set()  # input channels whose buffers are channel state

    def attach_input(self, task_input: CheckpointedInput) -> None:
        self._input = task_input

    # --- input events -------------------------------------------------------------------------

    def on_buffer(self, channel: int, payload: bytes) -> None:
        """Every buffer taken from the input gate, before it is processed."""
        if self._handler.aligning_checkpoint_id is not None:
            self._processed_data += len(payload)
        if channel in self.recording:
            assert self._capture is not None  # recording: a capture is on
            self._capture.record(channel, payload)

    def on_barrier(
        self, channel: int, barrier: CheckpointBarrier, buffers_before: list[bytes] | None = None
    ) -> None:
        """``buffers_before``: given for a priority barrier, what was queued before it."""
        now_ns = time.time_ns()
        self._first_barrier_ms.setdefault(barrier.checkpoint_id, now_ns / 1e6)
        self._buffers_before = buffers_before or []
        priority = buffers_before is not None
        self._execute(self._handler.on_barrier(channel, barrier, now_ns, priority))

    def on_cancel_marker(self, checkpoint_id: int) -> None:
        self._execute(self._handler.on_cancel_marker(checkpoint_id))

    def on_end_of_partition(self, channel: int) -> None:
        self._execute(self._handler.on_end_of_partition(channel))

    def on_time(self, now_ns: int) -> None:
        """Every turn of the task loop, with unaligned checkpoints: the alignment timeout, and
        the barriers waiting in an output backlog past theirs (their overtaken buffers are
        channel state, and the checkpoint is acknowledged once every output sent it)."""
        if self._handler.aligning_checkpoint_id is not None:
            self._execute(self._handler.on_alignment_timer(now_ns))
        timed = [s for s in self._snapshots.values() if s.timed_barrier is not None]
        if not timed:
            return
        # (a snapshot with a timed barrier has a capture: _checkpoint made both)
        for (edge, target), payload, overtaken in self._chain.promote_overdue_barriers(now_ns):
            for snapshot in timed:
                if snapshot.timed_barrier is payload:
                    assert snapshot.capture is not None
                    snapshot.capture.add_output(edge, target, overtaken)
        for snapshot in timed:
            assert snapshot.timed_barrier is not None and snapshot.capture is not None
            if not self._chain.output_holds(snapshot.timed_barrier):
                snapshot.timed_barrier = None
                snapshot.capture.outputs_sent()
                self._write_channel_state_if_complete(snapshot)

    def trigger(self, barrier: CheckpointBarrier) -> None:
        """A source task: the JobMaster triggered a checkpoint; no alignment to wait for."""
        unaligned = barrier.options.alignment is Alignment.UNALIGNED
        self._checkpoint(barrier, alignment_ms=0.0, processed_data=0, unaligned=unaligned)
        if unaligned:
            self._input_complete(barrier.checkpoint_id)

    def _execute(self, actions: list[Action]) -> None:
        # Only a task with input (attached) aligns barriers; only an unaligned checkpoint,
        # which made the capture, asks to capture channels.
        for action in actions:
            if isinstance(action, BlockChannel):
                assert self._input is not None
                self._input.block_channel(action.channel)
            elif isinstance(action, SnapshotNow):
                alignment_ms = (time.time_ns() - action.alignment_started_ns) / 1e6
                self._checkpoint(
                    action.barrier, alignment_ms, self._processed_data, action.unaligned
                )
                self._processed_data = 0
            elif isinstance(action, CaptureChannels):
                assert self._capture is not None and self._input is not None
                self._capture.record_channels(action.channels)
                self.recording = set(self._capture.recording)
                self._input.overtake_barriers(action.checkpoint_id)
            elif isinstance(action, EndChannelCapture):
                assert self._capture is not None
                self._capture.end_channel(action.channel, self._buffers_before)
                self.recording = set(self._capture.recording)
            elif isinstance(action, InputStateComplete):
                self._input_complete(action.checkpoint_id)
            elif isinstance(action, UnblockAll):
                assert self._input is not None
                self._input.unblock_all_channels()
            elif isinstance(action, Decline):
                self._processed_data = 0
                self._drop_capture(action.checkpoint_id)
                self._decline(action.checkpoint_id, action.reason)

    # --- notifications from the JobMaster ------------------------------------------------------

    @property
    def sources_paused(self) -> bool:
        """A suspend savepoint was taken here and was not aborted: read no more input."""
        return self._stopping_at is not None

    def notify_complete(self, checkpoint_id: int) -> None:
        self._chain.notify_checkpoint_complete(checkpoint_id)
        final = self._final_checkpoint_id
        if final is not None and checkpoint_id >= final:
            self.final_checkpoint_completed = True
        if self._stopping_at is not None and checkpoint_id >= self._stopping_at:
            self.stop_completed = True

    def notify_aborted(self, checkpoint_id: int, references_released: bool) -> None:
        if checkpoint_id == self._stopping_at:
            self._stopping_at = None  # the stop failed: the job goes on
        self._aborted.add(checkpoint_id)  # its writing stops, and deletes what it wrote
        self._drop_capture(checkpoint_id)
        self._snapshots.pop(checkpoint_id, None)
        self._chain.notify_checkpoint_aborted(checkpoint_id, references_released)

    # --- the snapshot ---------------------------------------------------------------------------

    def _checkpoint(
        self,
        barrier: CheckpointBarrier,
        alignment_ms: float,
        processed_data: int,
        unaligned: bool,
    ) -> None:
        """The synchronous phase; hands the writing to the pool."""
        started = time.perf_counter()
        cid, options = barrier.checkpoint_id, barrier.options
        snapshots = self._chain.snapshot_state(cid, options)
        payload = encode_barrier(barrier)
        timed = options.alignment is Alignment.ALIGNED_WITH_TIMEOUT
        capture = self._new_capture(cid) if unaligned or timed else None
        first_barrier_ms = self._first_barrier_ms.pop(cid, time.time_ns() / 1e6)
        snapshot = _Snapshot(
            barrier,
            0.0,
            alignment_ms,
            processed_data,
            max(0.0, first_barrier_ms - barrier.timestamp_ms),
            unaligned,
            capture,
        )
        self._snapshots[cid] = snapshot
        if unaligned:
            assert capture is not None
            for (edge, target), overtaken in self._chain.broadcast_priority_event(
                Kind.PRIORITY_BARRIER, payload
            ).items():
                capture.add_output(edge, target, overtaken)
            capture.outputs_sent()
            remainder = self._input.unprocessed_input() if self._input is not None else None
            if remainder is not None and remainder[1].values:
                capture.record(remainder[0], _UNTYPED.encode(remainder[1]))
            self._capture = capture
        elif timed:
            assert capture is not None
            self._chain.broadcast_event(Kind.BARRIER, payload, barrier.timeout_deadline_ns)
            snapshot.timed_barrier = payload
            capture.input_complete()  # aligned: nothing in flight before it was processed
        else:
            self._chain.broadcast_event(Kind.BARRIER, payload)
        if options.is_final and self._final_checkpoint_id is None:
            self._final_checkpoint_id = cid
        if options.stops_sources:
            self._stopping_at = cid
        snapshot.sync_ms = (time.perf_counter() - started) * 1000
        awaited = [s.awaited for _, s in snapshots if s is not None and s.awaited is not None]
        self._await(snapshot, awaited)
        self._pool.submit(self._write_state, snapshot, snapshots)

    def _await(self, snapshot: _Snapshot, awaited: list[Future[None]]) -> None:
        """The acknowledgement also waits for ``awaited``, done on any thread: each, once
        done, is looked at on the task thread."""
        snapshot.awaiting = len(awaited)
        run = self._task.run_in_task_thread
        for future in awaited:
            future.add_done_callback(lambda f: run(lambda: self._awaited_done(snapshot, f)))

    def _awaited_done(self, snapshot: _Snapshot, future: Future[None]) -> None:
        cid = snapshot.barrier.checkpoint_id
        if self._snapshots.get(cid) is not snapshot:
            return  # aborted or failed meanwhile
        error = future.exception() if not future.cancelled() else RuntimeError("canceled")
        if error is not None:
            detail = f"records written before the barrier did not arrive: {error}"
            self._snapshot_failed(cid, detail)
            return
        snapshot.awaiting -= 1
        self._acknowledge_if_written(snapshot)

    def _input_complete(self, checkpoint_id: int) -> None:
        snapshot = self._snapshots.get(checkpoint_id)
        self.recording = set()
        self._capture = None
        if snapshot is not None and snapshot.capture is not None:
            snapshot.capture.input_complete()
            self._write_channel_state_if_complete(snapshot)

    def _new_capture(self, checkpoint_id: int) -> ChannelStateCapture:
        """A capture that records which input each channel feeds and how many consumers each
        output edge has, for a restore into a two-input head or at another parallelism."""
        descriptor = self._descriptor
        consumers = {plan.edge: len(plan.targets) for plan in descriptor.outputs}
        return ChannelStateCapture(checkpoint_id, descriptor.input_of_channel, consumers)

    def _drop_capture(self, checkpoint_id: int) -> None:
        if self._capture is not None and self._capture.checkpoint_id == checkpoint_id:
            self._capture = None
            self.recording = set()

    def _streams(self, snapshot: _Snapshot, uid: str) -> CheckpointStreams:
        descriptor, options = self._descriptor, snapshot.barrier.options
        storage = (
            CheckpointDirectory(options.target_location, descriptor.config.write_buffer_size)
            if options.is_savepoint
            else self._storage
        )
        streams = CheckpointStreams(
            storage,
            snapshot.barrier.checkpoint_id,
            uid,
            descriptor.subtask,
            descriptor.attempt,
            descriptor.config.inline_threshold,
            self._aborted.__contains__,
            savepoint=options.is_savepoint,
        )
        snapshot.written.append(streams)
        return streams

    def _write_state(
        self, snapshot: _Snapshot, snapshots: list[tuple[str, OperatorSnapshot | None]]
    ) -> None:
        """On the pool: writes the operators' state streams; the rest on the task thread. If
        the coordinator aborts the checkpoint meanwhile, stops writing and deletes what it
        wrote (the coordinator deletes the checkpoint's directory too, but may do so before
        this thread's last write, and does not know of shared files before the ack)."""
        descriptor = self._descriptor
        cid = snapshot.barrier.checkpoint_id
        started = time.perf_counter()
        try:
            states: dict[str, OperatorSubtaskState] = {}
            for uid, snap in snapshots:
                if snap is None:
                    continue
                streams = self._streams(snapshot, uid)
                operator_state = (
                    streams.write(snap.operator_state, "op") if snap.operator_state else None
                )
                keyed = list(snap.keyed(streams)) if snap.keyed else []
                states[uid] = OperatorSubtaskState(descriptor.subtask, operator_state, keyed)
            if cid in self._aborted:
                raise CheckpointAbortedError(f"checkpoint {cid} was aborted")
            async_ms = (time.perf_counter() - started) * 1000
            self._task.run_in_task_thread(lambda: self._state_written(snapshot, states, async_ms))
        except CheckpointAbortedError:
            _delete_written(snapshot)
        except Exception as e:  # noqa: BLE001 - declines the checkpoint, as Flink does
            _delete_written(snapshot)
            detail = f"asynchronous snapshot failed: {type(e).__name__}: {e}"
            self._task.run_in_task_thread(lambda: self._snapshot_failed(cid, detail))

    def _state_written(
        self, snapshot: _Snapshot, states: dict[str, OperatorSubtaskState], async_ms: float
    ) -> None:
        snapshot.operator_states = states
        snapshot.async_ms = async_ms
        self._acknowledge_if_written(snapshot)

    def _write_channel_state_if_complete(self, snapshot: _Snapshot) -> None:
        capture = snapshot.capture
        assert capture is not None  # asked of a snapshot that captures channel state
        if not capture.complete or snapshot.channel_state_written:
            return
        recorded = capture.snapshot()
        if recorded is None:
            snapshot.channel_state_written = True
            self._acknowledge_if_written(snapshot)
            return
        head = self._descriptor.chain[0].uid
        streams = self._streams(snapshot, head)
        cid = snapshot.barrier.checkpoint_id

        def write() -> None:
            try:
                handle = streams.write(encode_channel_state(recorded), "channel")
            except CheckpointAbortedError:
                return
            except Exception as e:  # noqa: BLE001 - declines the checkpoint
                detail = f"writing channel state failed: {type(e).__name__}: {e}"
                self._task.run_in_task_thread(lambda: self._snapshot_failed(cid, detail))
                return
            self._task.run_in_task_thread(lambda: self._channel_state_written(snapshot, handle))

        self._pool.submit(write)

    def _channel_state_written(self, snapshot: _Snapshot, handle: StreamHandle) -> None:
        snapshot.channel_state = handle
        snapshot.channel_state_written = True
        self._acknowledge_if_written(snapshot)

    def _acknowledge_if_written(self, snapshot: _Snapshot) -> None:
        cid = snapshot.barrier.checkpoint_id
        if self._snapshots.get(cid) is not snapshot or snapshot.operator_states is None:
            return
        if snapshot.awaiting:
            return
        if snapshot.capture is not None and not snapshot.channel_state_written:
            return
        del self._snapshots[cid]
        states = snapshot.operator_states
        if snapshot.channel_state is not None:
            head = self._descriptor.chain[0].uid
            own = states.get(head, OperatorSubtaskState(self._descriptor.subtask))
            states[head] = OperatorSubtaskState(
                own.subtask, own.operator_state, own.keyed_state, snapshot.channel_state
            )
        descriptor = self._descriptor
        stats = SubtaskCheckpointStats(
            descriptor.vertex,
            descriptor.subtask,
            snapshot.sync_ms,
            snapshot.async_ms,
            snapshot.alignment_ms,
            sum(s.state_size() for s in states.values()),
            snapshot.processed_data,
            sum(s.checkpointed_size(cid) for s in states.values()),
            unaligned=snapshot.unaligned or bool(snapshot.capture and snapshot.channel_state),
            persisted_data=snapshot.capture.persisted_bytes if snapshot.capture else 0,
            start_delay_ms=snapshot.start_delay_ms,
        )
        self._task.send_to_job_master(
            msg.AcknowledgeCheckpoint(
                descriptor.attempt, descriptor.vertex, descriptor.subtask, cid, states, stats
            )
        )

    def _snapshot_failed(self, cid: int, detail: str) -> None:
        snapshot = self._snapshots.pop(cid, None)
        if snapshot is not None:
            _delete_written(snapshot)
        self._decline(cid, DeclineReason.SNAPSHOT_FAILED, detail, downstream=False)

    def _decline(
        self, cid: int, reason: DeclineReason, detail: str = "", downstream: bool = True
    ) -> None:
        descriptor = self._descriptor
        self._task.send_to_job_master(
            msg.DeclineCheckpoint(
                descriptor.attempt, descriptor.vertex, descriptor.subtask, cid, reason, detail
            )
        )
        if downstream:
            self._chain.broadcast_event(Kind.CANCEL_MARKER, CHECKPOINT_ID.pack(cid))


def _delete_written(snapshot: _Snapshot) -> None:
    for streams in snapshot.written:
        streams.delete_written()
