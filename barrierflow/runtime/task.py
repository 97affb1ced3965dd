"""StreamTask: one subtask of one vertex, running its operator chain in a mailbox loop.

The loop, between buffers: run mails (control messages from the JobMaster, finished async
snapshots, cancellation), then, if no output channel has a backlog, take the next buffer (a
source batch or a network buffer of an unblocked channel) and run it through the chain.
Checkpoints therefore happen between buffers, never inside a record.

Lifecycle: open operators (restoring state) -> process -> end of input: ``finish()`` the chain,
send END_OF_DATA -> with checkpointing, wait until a *final* checkpoint completes (one triggered
after every source of the job ended, so every task has finished and 2PC sinks commit their last
data; all tasks stay until then, so every checkpoint sees every task) -> END_OF_PARTITION
downstream -> close.

**Threading:** ``run`` on the task's own thread; ``cancel`` from any thread (it puts a mail).
The asynchronous phase of snapshots runs on the slot's pool and reports back through mails.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
import time
import traceback
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import zmq

from barrierflow.checkpoint.barrier_handler import (
    AtLeastOnceBarrierHandler,
    BlockChannel,
    CheckpointBarrier,
    Decline,
    ExactlyOnceBarrierHandler,
    SnapshotNow,
    UnblockAll,
)
from barrierflow.checkpoint.metadata import (
    OperatorSubtaskState,
    SubtaskCheckpointStats,
)
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import (
    CheckpointAbortedError,
    CheckpointStreams,
    StorageRestoreStreams,
)
from barrierflow.checkpoint.storage import CheckpointStorage
from barrierflow.graph.execution_graph import OutputPlan
from barrierflow.protocol import messages as msg
from barrierflow.protocol.frames import BARRIER, CHECKPOINT_ID, Kind
from barrierflow.runtime.mailbox import Mailbox
from barrierflow.runtime.network.input_gate import InputGate
from barrierflow.runtime.network.output import OutputChannel, ResultPartition
from barrierflow.runtime.operators import (
    OperatorContext,
    OperatorSpec,
    SourceOperator,
    create_operator,
)
from barrierflow.state.backends import StateBackendConfig, local_recovery_dir, local_subtask_dir


@dataclass(frozen=True)
class TaskConfig:
    buffer_size: int
    buffer_timeout_s: float
    initial_credit: int
    checkpointing: bool
    exactly_once: bool
    storage_uri: str | None  # this job's root: <checkpoint-dir>/<job-id>
    inline_threshold: int
    write_buffer_size: int
    max_parallelism: int
    state_backend: StateBackendConfig


@dataclass(frozen=True)
class TaskDescriptor:
    """Everything one subtask needs; built by the JobMaster, shipped in the Spark closure."""

    job_id: str
    job_name: str
    attempt: int
    token: int
    vertex: str
    vertex_name: str
    subtask: int
    parallelism: int
    chain: tuple[OperatorSpec, ...]
    num_input_channels: int
    outputs: tuple[OutputPlan, ...]
    config: TaskConfig
    restore_uri: str | None  # job root of the checkpoint restored from
    restore: dict[str, OperatorRestore] | None  # operator uid -> state


class TaskCancelled(Exception):
    pass


class StreamTask:
    def __init__(
        self,
        descriptor: TaskDescriptor,
        context: zmq.Context,
        jobmaster_endpoint: str,
        input_gate: InputGate | None,
        endpoint_of: dict[tuple[str, int], str],
        snapshot_pool: Executor,
    ) -> None:
        self.d = descriptor
        self.name = f"{descriptor.vertex_name} ({descriptor.subtask + 1}/{descriptor.parallelism})"
        self._context = context
        self._jobmaster_endpoint = jobmaster_endpoint
        self._gate = input_gate
        self._endpoint_of = endpoint_of
        self._pool = snapshot_pool
        self.mailbox = Mailbox(context)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name=f"task {self.name}", daemon=True)
        config = descriptor.config
        n = descriptor.num_input_channels
        self._barriers = (
            ExactlyOnceBarrierHandler(n) if config.exactly_once else AtLeastOnceBarrierHandler(n)
        )
        self._end_of_data_channels: set[int] = set()
        self._finished = False  # finish() was called: no more records
        self._final_checkpoint_id: int | None = None  # first checkpoint after all sources ended
        self._final_checkpoint_done = False
        self._done = False
        self._alignment_bytes = 0
        self._aborted_checkpoints: set[int] = set()  # written by the task thread only
        self._storage = (
            CheckpointStorage(config.storage_uri, config.write_buffer_size)
            if config.storage_uri
            else None
        )

    # --- thread entry -----------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        self.mailbox.put(self._raise_cancelled)

    @staticmethod
    def _raise_cancelled() -> None:
        raise TaskCancelled()

    def run(self) -> None:
        d = self.d
        self._ctl = self._context.socket(zmq.DEALER)
        self._ctl.setsockopt(zmq.IDENTITY, msg.task_identity(d.attempt, d.vertex, d.subtask))
        self._ctl.setsockopt(zmq.LINGER, 2000)
        self._ctl.connect(self._jobmaster_endpoint)
        self._partitions: list[ResultPartition] = []
        self._operators = []
        try:
            started = time.perf_counter()
            restore_streams = self._open()
            self._send(
                msg.TaskRunning(
                    d.attempt,
                    d.vertex,
                    d.subtask,
                    restore_bytes_read=restore_streams.bytes_read,
                    restore_ms=(time.perf_counter() - started) * 1000,
                )
            )
            self._loop()
            self._send(msg.TaskFinished(d.attempt, d.vertex, d.subtask))
        except TaskCancelled:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the JobMaster, slot re-raises
            self.error = e
            self._send(
                msg.TaskFailed(
                    d.attempt,
                    d.vertex,
                    d.subtask,
                    f"{type(e).__name__}: {e}",
                    "".join(traceback.format_exception(e)),
                )
            )
        finally:
            self._close()

    # --- setup and teardown -------------------------------------------------------------------

    def _open(self) -> StorageRestoreStreams:
        """Connects the outputs and opens the chain, restoring its state; returns what the
        restore read."""
        d = self.d
        restore_streams = StorageRestoreStreams(
            CheckpointStorage(d.restore_uri) if d.restore_uri else None,
            shares_storage=d.restore_uri is not None and d.restore_uri == d.config.storage_uri,
        )
        backend = d.config.state_backend
        for plan in d.outputs:
            channels = []
            for target in plan.targets:
                identity = f"{plan.edge}:{d.subtask}:{target.channel}".encode()
                channels.append(
                    OutputChannel(
                        self._context,
                        self._endpoint_of[target.consumer],
                        identity,
                        d.token,
                        target.channel,
                    )
                )
            self._partitions.append(
                ResultPartition(
                    plan.partitioner,
                    channels,
                    d.config.buffer_size,
                    d.config.max_parallelism,
                    d.chain[-1].name,
                )
            )
        for spec in d.chain:
            name = f"{spec.uid}-{d.subtask}"
            op = create_operator(spec)
            op.open(
                OperatorContext(
                    subtask=d.subtask,
                    parallelism=d.parallelism,
                    max_parallelism=d.config.max_parallelism,
                    attempt=d.attempt,
                    task_name=self.name,
                    checkpointing=d.config.checkpointing,
                    restore=(d.restore or {}).get(spec.uid) if d.restore is not None else None,
                    restore_streams=restore_streams,
                    state_backend=backend,
                    local_dir=local_subtask_dir(backend, d.job_id, name, d.attempt)
                    if backend.kind == "rocksdb"
                    else "",
                    recovery_dir=local_recovery_dir(backend, d.job_id, name)
                    if backend.kind == "rocksdb" and backend.local_recovery
                    else None,
                )
            )
            self._operators.append(op)
        self._source = (
            self._operators[0] if isinstance(self._operators[0], SourceOperator) else None
        )
        self._chain = self._operators[1:] if self._source else self._operators
        return restore_streams

    def _close(self) -> None:
        for op in reversed(self._operators):
            with contextlib.suppress(Exception):
                op.close()
        for p in self._partitions:
            p.close()
        if self._gate is not None:
            self._gate.close()
        self._ctl.close()
        self.mailbox.close()

    # --- the mailbox loop --------------------------------------------------------------------

    def _loop(self) -> None:
        poller_in = zmq.Poller()
        poller_in.register(self._ctl, zmq.POLLIN)
        poller_in.register(self.mailbox.socket, zmq.POLLIN)
        if self._gate is not None:
            poller_in.register(self._gate.socket, zmq.POLLIN)
        poller_out = zmq.Poller()
        poller_out.register(self._ctl, zmq.POLLIN)
        poller_out.register(self.mailbox.socket, zmq.POLLIN)
        for p in self._partitions:
            for c in p.channels:
                poller_out.register(c.socket, zmq.POLLIN)
        timeout_s = self.d.config.buffer_timeout_s
        next_flush = time.monotonic() + timeout_s
        buffer_size = self.d.config.buffer_size
        source = self._source

        while not self._done:
            self._run_mails()
            if self._backlogged():
                poller_out.poll(100)
                continue
            if source is not None and not self._finished:
                batch = source.poll(buffer_size)
                if batch is None:
                    self._end_of_input()
                elif batch:
                    self._process(batch)
                else:
                    poller_in.poll(10)
            elif self._gate is not None and not self._gate.is_finished:
                item = self._gate.poll_next()
                if item is None:
                    wait_ms = max(0, int((next_flush - time.monotonic()) * 1000)) + 1
                    poller_in.poll(wait_ms)
                else:
                    self._on_input(*item)
            else:
                self._maybe_terminate()
                if not self._done:
                    poller_in.poll(100)
            now = time.monotonic()
            if now >= next_flush:
                for p in self._partitions:
                    p.flush()
                next_flush = now + timeout_s
        self._drain_outputs()

    def _backlogged(self) -> bool:
        for p in self._partitions:
            if p.backlogged:
                p.receive_credits()
                if p.backlogged:
                    return True
        return False

    def _drain_outputs(self) -> None:
        """Waits until every queued buffer and event went out (end of the task)."""
        while self._backlogged():
            self._run_mails()
            time.sleep(0.001)

    def _run_mails(self) -> None:
        while self._ctl.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            self._on_control(msg.decode(self._ctl.recv()))
        if self.mailbox.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            for mail in self.mailbox.drain():
                mail()

    def _process(self, records: list[Any]) -> None:
        for op in self._chain:
            records = op.process_batch(records)
            if not records:
                return
        for p in self._partitions:
            p.emit(records)

    def _emit_all(self, kind: Kind, payload: bytes | None = None) -> None:
        for p in self._partitions:
            p.broadcast_event(kind, payload)

    # --- input events ---------------------------------------------------------------------------

    def _on_input(self, channel: int, kind: Kind, payload: bytes | None) -> None:
        if kind == Kind.BUFFER:
            if self._barriers.aligning_checkpoint_id is not None:
                self._alignment_bytes += len(payload)
            self._process(pickle.loads(payload))
        elif kind == Kind.BARRIER:
            barrier = CheckpointBarrier(*BARRIER.unpack(payload))
            self._execute(self._barriers.on_barrier(channel, barrier, time.perf_counter_ns()))
        elif kind == Kind.CANCEL_MARKER:
            (cid,) = CHECKPOINT_ID.unpack(payload)
            self._execute(self._barriers.on_cancel_marker(cid))
        elif kind == Kind.END_OF_DATA:
            self._end_of_data_channels.add(channel)
            if len(self._end_of_data_channels) == self._gate.num_channels:
                self._end_of_input()
        elif kind == Kind.END_OF_PARTITION:
            self._execute(self._barriers.on_end_of_partition(channel))

    def _execute(self, actions: list) -> None:
        for action in actions:
            if isinstance(action, BlockChannel):
                self._gate.block(action.channel)
            elif isinstance(action, SnapshotNow):
                alignment_ms = (time.perf_counter_ns() - action.alignment_started_ns) / 1e6
                self._checkpoint(action.barrier, alignment_ms, self._alignment_bytes)
                self._alignment_bytes = 0
            elif isinstance(action, UnblockAll):
                self._gate.unblock_all()
            elif isinstance(action, Decline):
                self._alignment_bytes = 0
                self._decline(action.checkpoint_id, action.reason.value)

    # --- end of input ---------------------------------------------------------------------------

    def _end_of_input(self) -> None:
        """All input was read: flush the chain, tell downstream and the JobMaster."""
        records: list[Any] = []
        for op in self._chain:
            if records:
                records = op.process_batch(records)
            records = records + op.finish()
        if records:
            for p in self._partitions:
                p.emit(records)
        self._finished = True
        self._emit_all(Kind.END_OF_DATA)
        if self._source is not None:
            self._send(msg.EndOfInput(self.d.attempt, self.d.vertex, self.d.subtask))
        self._maybe_terminate()

    def _maybe_terminate(self) -> None:
        if self._done or not self._finished:
            return
        if self._gate is not None and not self._gate.is_finished:
            return
        if self.d.config.checkpointing and not self._final_checkpoint_done:
            return
        self._emit_all(Kind.END_OF_PARTITION)
        self._done = True

    # --- checkpoints -----------------------------------------------------------------------------

    def _on_control(self, message: msg.AnyMessage) -> None:
        if message.attempt != self.d.attempt:
            return
        if isinstance(message, msg.TriggerCheckpoint):
            if self._source is None:
                return
            barrier = CheckpointBarrier(
                message.checkpoint_id, message.timestamp_ms, message.is_final
            )
            self._checkpoint(barrier, 0.0)
        elif isinstance(message, msg.NotifyCheckpointComplete):
            for op in self._operators:
                op.notify_checkpoint_complete(message.checkpoint_id)
            final = self._final_checkpoint_id
            if final is not None and message.checkpoint_id >= final:
                self._final_checkpoint_done = True
                self._maybe_terminate()
        elif isinstance(message, msg.NotifyCheckpointAborted):
            self._aborted_checkpoints.add(message.checkpoint_id)
            for op in self._operators:
                op.notify_checkpoint_aborted(message.checkpoint_id, message.references_released)
        elif isinstance(message, msg.CancelAttempt):
            raise TaskCancelled()

    def _checkpoint(
        self, barrier: CheckpointBarrier, alignment_ms: float, alignment_bytes: int = 0
    ) -> None:
        """Synchronous phase here; the writing runs on the snapshot pool, then acks by mail."""
        started = time.perf_counter()
        cid = barrier.checkpoint_id
        snapshots = [(op.uid, op.snapshot_state(cid)) for op in self._operators]
        self._emit_all(Kind.BARRIER, BARRIER.pack(cid, barrier.timestamp_ms, barrier.is_final))
        if barrier.is_final and self._final_checkpoint_id is None:
            self._final_checkpoint_id = cid
        sync_ms = (time.perf_counter() - started) * 1000
        self._pool.submit(
            self._async_snapshot, cid, snapshots, sync_ms, alignment_ms, alignment_bytes
        )

    def _async_snapshot(
        self, cid: int, snapshots: list, sync_ms: float, alignment_ms: float, alignment_bytes: int
    ) -> None:
        """Writes the state streams and mails the acknowledgement. If the coordinator aborts the
        checkpoint meanwhile, stops writing and deletes what it wrote (the coordinator deletes
        the checkpoint's directory too, but may do so before this thread's last write, and does
        not know of shared files before the acknowledgement)."""
        d = self.d
        started = time.perf_counter()
        all_streams: list[CheckpointStreams] = []
        try:
            states: dict[str, OperatorSubtaskState] = {}
            for uid, snap in snapshots:
                if snap is None:
                    continue
                streams = CheckpointStreams(
                    self._storage,
                    cid,
                    uid,
                    d.subtask,
                    d.attempt,
                    d.config.inline_threshold,
                    self._aborted_checkpoints.__contains__,
                )
                all_streams.append(streams)
                operator_state = (
                    streams.write(snap.operator_state, "op") if snap.operator_state else None
                )
                keyed = snap.keyed(streams) if snap.keyed else []
                states[uid] = OperatorSubtaskState(d.subtask, operator_state, keyed)
            if cid in self._aborted_checkpoints:
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
            self.mailbox.put(lambda: self._send(ack))
        except CheckpointAbortedError:
            for streams in all_streams:
                streams.delete_written()
        except Exception as e:  # noqa: BLE001 - declines the checkpoint, as Flink does
            for streams in all_streams:
                streams.delete_written()
            reason = f"asynchronous snapshot failed: {type(e).__name__}: {e}"
            self.mailbox.put(lambda: self._decline(cid, reason, downstream=False))

    def _decline(self, cid: int, reason: str, downstream: bool = True) -> None:
        d = self.d
        self._send(msg.DeclineCheckpoint(d.attempt, d.vertex, d.subtask, cid, reason))
        if downstream:
            self._emit_all(Kind.CANCEL_MARKER, CHECKPOINT_ID.pack(cid))

    def _send(self, message: msg.Message) -> None:
        self._ctl.send(msg.encode(message))
