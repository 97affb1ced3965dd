"""The checkpointing of one subtask (Flink's SubtaskCheckpointCoordinator).

It owns the barrier handler of the task's input gate and carries out what the handler decides:
blocks and unblocks channels, takes the snapshot, forwards barriers and cancel markers, and
acknowledges or declines to the JobMaster. A snapshot has two phases:

1. synchronous, on the task thread between two buffers: every operator of the chain snapshots
   its state with the checkpoint's options (a copy-on-write view, a RocksDB flush), then the
   barrier goes downstream behind every record emitted before it;
2. asynchronous, on the slot's snapshot pool: the state is written to checkpoint storage, then
   the acknowledgement is mailed back to the task thread, which sends it.

A checkpoint the coordinator aborts while its asynchronous phase runs stops writing and deletes
what it wrote. A savepoint's files go to its own directory (``CheckpointOptions.target_location``).
After the barrier of a *suspend* savepoint (stop) the task's sources read nothing more, until it
completes (the task then ends) or is aborted (they read on).

**Threading:** every method on the task thread, except the asynchronous phase (the pool).
**I/O:** checkpoint storage, in the asynchronous phase.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Protocol

from barrierflow.checkpoint.barrier_handler import (
    Action,
    AtLeastOnceBarrierHandler,
    BlockChannel,
    Decline,
    ExactlyOnceBarrierHandler,
    SnapshotNow,
    UnblockAll,
)
from barrierflow.checkpoint.metadata import OperatorSubtaskState, SubtaskCheckpointStats
from barrierflow.checkpoint.state_streams import CheckpointAbortedError, CheckpointStreams
from barrierflow.checkpoint.storage import CheckpointStorage
from barrierflow.protocol import messages as msg
from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier
from barrierflow.protocol.frames import CHECKPOINT_ID, Kind, encode_barrier
from barrierflow.protocol.messages import DeclineReason
from barrierflow.runtime.operators import Operator, OperatorSnapshot
from barrierflow.runtime.task_descriptor import TaskDescriptor


class CheckpointedTask(Protocol):
    """What the coordinator asks of its task (``StreamTask``), all on the task thread."""

    def block_channel(self, channel: int) -> None: ...

    def unblock_all_channels(self) -> None: ...

    def broadcast_event(self, kind: Kind, payload: bytes | None) -> None:
        """Behind every record emitted so far, on every output channel."""

    def send_to_job_master(self, message: msg.Message) -> None: ...

    def run_in_task_thread(self, mail: Callable[[], None]) -> None:
        """From any thread: run ``mail`` on the task thread, between buffers."""


class SubtaskCheckpointCoordinator:
    def __init__(
        self,
        descriptor: TaskDescriptor,
        task: CheckpointedTask,
        operators: Sequence[Operator],
        snapshot_pool: Executor,
    ) -> None:
        config = descriptor.config
        n = descriptor.num_input_channels
        self._d = descriptor
        self._task = task
        self._operators = operators
        self._pool = snapshot_pool
        self._handler = (
            ExactlyOnceBarrierHandler(n) if config.exactly_once else AtLeastOnceBarrierHandler(n)
        )
        self._storage = (
            CheckpointStorage(config.storage_uri, config.write_buffer_size)
            if config.storage_uri
            else None
        )
        self._alignment_bytes = 0
        self._aborted: set[int] = set()  # written by the task thread only
        self._final_checkpoint_id: int | None = None  # the first final barrier seen here
        self.final_checkpoint_completed = False
        self._stopping_at: int | None = None  # a suspend savepoint taken here, still pending
        self.stop_completed = False  # a suspend savepoint completed: the task ends

    # --- input events -------------------------------------------------------------------------

    def on_buffer(self, size: int) -> None:
        if self._handler.aligning_checkpoint_id is not None:
            self._alignment_bytes += size

    def on_barrier(self, channel: int, barrier: CheckpointBarrier) -> None:
        self._execute(self._handler.on_barrier(channel, barrier, time.perf_counter_ns()))

    def on_cancel_marker(self, checkpoint_id: int) -> None:
        self._execute(self._handler.on_cancel_marker(checkpoint_id))

    def on_end_of_partition(self, channel: int) -> None:
        self._execute(self._handler.on_end_of_partition(channel))

    def trigger(self, barrier: CheckpointBarrier) -> None:
        """A source task: the JobMaster triggered a checkpoint; no alignment to wait for."""
        self._checkpoint(barrier, alignment_ms=0.0, alignment_bytes=0)

    def _execute(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, BlockChannel):
                self._task.block_channel(action.channel)
            elif isinstance(action, SnapshotNow):
                alignment_ms = (time.perf_counter_ns() - action.alignment_started_ns) / 1e6
                self._checkpoint(action.barrier, alignment_ms, self._alignment_bytes)
                self._alignment_bytes = 0
            elif isinstance(action, UnblockAll):
                self._task.unblock_all_channels()
            elif isinstance(action, Decline):
                self._alignment_bytes = 0
                self._decline(action.checkpoint_id, action.reason)

    # --- notifications from the JobMaster ------------------------------------------------------

    @property
    def sources_paused(self) -> bool:
        """A suspend savepoint was taken here and was not aborted: read no more input."""
        return self._stopping_at is not None

    def notify_complete(self, checkpoint_id: int) -> None:
        for op in self._operators:
            op.notify_checkpoint_complete(checkpoint_id)
        final = self._final_checkpoint_id
        if final is not None and checkpoint_id >= final:
            self.final_checkpoint_completed = True
        if self._stopping_at is not None and checkpoint_id >= self._stopping_at:
            self.stop_completed = True

    def notify_aborted(self, checkpoint_id: int, references_released: bool) -> None:
        if checkpoint_id == self._stopping_at:
            self._stopping_at = None  # the stop failed: the job goes on
        self._aborted.add(checkpoint_id)
        for op in self._operators:
            op.notify_checkpoint_aborted(checkpoint_id, references_released)

    # --- the snapshot ---------------------------------------------------------------------------

    def _checkpoint(
        self, barrier: CheckpointBarrier, alignment_ms: float, alignment_bytes: int
    ) -> None:
        """The synchronous phase; hands the asynchronous one to the pool."""
        started = time.perf_counter()
        cid, options = barrier.checkpoint_id, barrier.options
        snapshots = [(op.uid, op.snapshot_state(cid, options)) for op in self._operators]
        self._task.broadcast_event(Kind.BARRIER, encode_barrier(barrier))
        if options.is_final and self._final_checkpoint_id is None:
            self._final_checkpoint_id = cid
        if options.stops_sources:
            self._stopping_at = cid
        sync_ms = (time.perf_counter() - started) * 1000
        self._pool.submit(self._write, barrier, snapshots, sync_ms, alignment_ms, alignment_bytes)

    def _write(
        self,
        barrier: CheckpointBarrier,
        snapshots: list[tuple[str, OperatorSnapshot | None]],
        sync_ms: float,
        alignment_ms: float,
        alignment_bytes: int,
    ) -> None:
        """The asynchronous phase: writes the state streams, then mails the acknowledgement.

        If the coordinator aborts the checkpoint meanwhile, stops writing and deletes what it
        wrote (the coordinator deletes the checkpoint's directory too, but may do so before this
        thread's last write, and does not know of shared files before the acknowledgement)."""
        d = self._d
        cid, options = barrier.checkpoint_id, barrier.options
        started = time.perf_counter()
        written: list[CheckpointStreams] = []
        try:
            storage = (
                CheckpointStorage(options.target_location, d.config.write_buffer_size)
                if options.is_savepoint
                else self._storage
            )
            states: dict[str, OperatorSubtaskState] = {}
            for uid, snap in snapshots:
                if snap is None:
                    continue
                streams = CheckpointStreams(
                    storage,
                    cid,
                    uid,
                    d.subtask,
                    d.attempt,
                    d.config.inline_threshold,
                    self._aborted.__contains__,
                    savepoint=options.is_savepoint,
                )
                written.append(streams)
                operator_state = (
                    streams.write(snap.operator_state, "op") if snap.operator_state else None
                )
                keyed = snap.keyed(streams) if snap.keyed else []
                states[uid] = OperatorSubtaskState(d.subtask, operator_state, keyed)
            if cid in self._aborted:
                raise CheckpointAbortedError(f"checkpoint {cid} was aborted")
            stats = SubtaskCheckpointStats(
                d.vertex,
                d.subtask,
                sync_ms,
                (time.perf_counter() - started) * 1000,
                alignment_ms,
                sum(s.state_size() for s in states.values()),
                alignment_bytes,
                sum(s.checkpointed_size(cid) for s in states.values()),
            )
            ack = msg.AcknowledgeCheckpoint(d.attempt, d.vertex, d.subtask, cid, states, stats)
            self._task.run_in_task_thread(lambda: self._task.send_to_job_master(ack))
        except CheckpointAbortedError:
            for streams in written:
                streams.delete_written()
        except Exception as e:  # noqa: BLE001 - declines the checkpoint, as Flink does
            for streams in written:
                streams.delete_written()
            detail = f"asynchronous snapshot failed: {type(e).__name__}: {e}"
            self._task.run_in_task_thread(
                lambda: self._decline(cid, DeclineReason.SNAPSHOT_FAILED, detail, downstream=False)
            )

    def _decline(
        self, cid: int, reason: DeclineReason, detail: str = "", downstream: bool = True
    ) -> None:
        d = self._d
        self._task.send_to_job_master(
            msg.DeclineCheckpoint(d.attempt, d.vertex, d.subtask, cid, reason, detail)
        )
        if downstream:
            self._task.broadcast_event(Kind.CANCEL_MARKER, CHECKPOINT_ID.pack(cid))
