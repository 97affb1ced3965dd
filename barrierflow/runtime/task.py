"""StreamTask: one subtask of one vertex, running its operator chain in a mailbox loop.

A turn of the loop (``step``): run mails (control messages from the JobMaster, finished
asynchronous snapshots, cancellation); then, if no output channel has a backlog, take the next
buffer (a source batch or a network buffer of an unblocked channel) and run it through the
chain. Checkpoints therefore happen between buffers, never inside a record; the task's
``SubtaskCheckpointCoordinator`` takes them.

With unaligned checkpoints a barrier must not wait behind slow work: a backlogged task still
takes the priority barriers of its input gate, and a buffer is processed in chunks of about a
millisecond with a look at the gate between two (a barrier that arrives meanwhile is handled
there, and the rest of the buffer becomes channel state). A task restored from an unaligned
checkpoint first sends the output channel state of its checkpoint, then processes its input
channel state, before it takes any new input (``checkpoint/channel_state.py``).

Lifecycle: ``open`` (connect outputs, open operators restoring their state) -> ``step`` until
done -> ``end`` -> ``close``. At the end of input: ``finish()`` the chain, send END_OF_DATA;
with checkpointing, wait until a *final* checkpoint completes (one triggered after every source
of the job ended, so every task has finished and 2PC sinks commit their last data; all tasks
stay until then, so every checkpoint sees every task); then END_OF_PARTITION downstream.

Event time: a buffer of a stream with event time carries the records' timestamps
(``protocol/frames.py``) and runs through the timed path of the chain. Watermarks come in band:
the ``WatermarkValve`` combines those of the input channels (the minimum over the active ones),
a timestamp assigner of the chain generates its own every ``pipeline.auto-watermark-interval``,
and each new watermark runs through the operators (firing their event-time timers) before it
goes downstream, behind the records it covers. Processing-time timers are looked at every turn.
The end of input advances event time to the end of time, firing every event-time timer.
Watermarks are not checkpointed: a restored task starts from the minimum again (so an unaligned
checkpoint's data in flight is replayed before any watermark, as it was before the barrier).

Metrics (``TaskIOMetrics``, sent with the slot's heartbeats): records in and out, counted per
buffer; the time spent waiting for input is idle, waiting for output credit back-pressured,
the rest busy.

**Threading:** ``run`` (or ``open``/``step``/``end``/``close``) on the task's own thread;
``cancel`` from any thread (it puts a mail). The asynchronous phase of snapshots runs on the
slot's pool and reports back through mails. **I/O:** only through the ``TaskNetwork``'s
sockets and, for snapshots and restores, checkpoint storage.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import zmq

from barrierflow.checkpoint.channel_state import decode_channel_state
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointStorage
from barrierflow.control import messages as msg
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.eventtime.watermark_valve import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    EmitWatermark,
    ValveAction,
    WatermarkValve,
)
from barrierflow.graph.transformation import PartitionerSpec
from barrierflow.protocol.buffer_codec import BufferEncoder, decode_buffer
from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier
from barrierflow.protocol.frames import (
    ACTIVE,
    CHECKPOINT_ID,
    FINAL_SNAPSHOT_FOLLOWS,
    IDLE,
    WATERMARK,
    Kind,
    decode_barrier,
)
from barrierflow.runtime.network.input_gate import InputGate, PriorityBarrier
from barrierflow.runtime.network.output import OutputChannel, ResultPartition
from barrierflow.runtime.operator_factory import converted_type, create_operator
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSpec,
)
from barrierflow.runtime.source_operator import SourceOperator
from barrierflow.runtime.subtask_checkpoint_coordinator import (
    OutputKey,
    SubtaskCheckpointCoordinator,
)
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_metrics import TaskIOMetrics
from barrierflow.runtime.task_network import TaskNetwork
from barrierflow.state.backends import local_recovery_dir, local_state_name, local_subtask_dir
from barrierflow.state.key_groups import KeyGroupCache, key_group_range_for_subtask

CHUNK_TARGET_S = 0.001  # unaligned: how long a chunk of a buffer may run before a look at
# the input gate for a priority barrier


class TaskCancelled(Exception):
    pass


def _keep(data: list[Any] | tuple[list[Any], list[int]], wanted: Callable[[Any], bool]):
    """The records of a buffer (with their timestamps, if it has them) that ``wanted``."""
    if type(data) is not tuple:
        return [r for r in data if wanted(r)]
    kept = [(r, t) for r, t in zip(*data, strict=True) if wanted(r)]
    return [r for r, _ in kept], [t for _, t in kept]


def _edge_type(last: OperatorSpec, partitioner: PartitionerSpec) -> Any:
    """The declared type the records of an edge were converted to (their buffers then go as
    MessagePack), or None: a side output's records keep their values (their tag declares
    their type)."""
    return None if partitioner.side_output is not None else converted_type(last)


class StreamTask:
    def __init__(
        self,
        descriptor: TaskDescriptor,
        network: TaskNetwork,
        input_gate: InputGate | None,
        snapshot_pool: Executor,
    ) -> None:
        self.d = descriptor
        self.name = descriptor.name
        self._cancel_requested = False
        self._network = network
        self._gate = input_gate
        self._pool = snapshot_pool
        self.mailbox = network.mailbox()
        self.error: BaseException | None = None
        self.metrics = TaskIOMetrics(descriptor.vertex, descriptor.subtask)  # read by the slot
        self.thread = threading.Thread(target=self.run, name=f"task {self.name}", daemon=True)
        self._end_of_data_channels: set[int] = set()
        self._finished = False  # finish() was called: no more records
        self._await_final = False  # a final snapshot follows the end of input (stop --drain)
        self._done = False  # END_OF_PARTITION sent
        self._ctl: zmq.Socket | None = None
        self._partitions: list[ResultPartition] = []
        self._operators: list[Operator] = []
        config = descriptor.config
        # Unaligned: look for priority barriers while backlogged and between chunks of a buffer.
        self._overtakes = config.unaligned_checkpoints and input_gate is not None
        self._chunk = min(64, config.buffer_size)  # records per chunk, adapted to CHUNK_TARGET_S
        # the rest of a chunked buffer: its records, or (records, timestamps)
        self._unprocessed: tuple[int, list[Any] | tuple[list[Any], list[int]]] | None = None
        # Timers (aligned-checkpoint timeout) are looked at every turn, at least this often:
        self._max_wait_ms = 5 if config.aligned_checkpoint_timeout_ms > 0 else 100

    # --- thread entry -----------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        """From any thread. Also marks the task, so that an error its cancellation causes
        (a send to a consumer that already stopped times out) counts as the cancellation."""
        self._cancel_requested = True
        self.mailbox.put(self._raise_cancelled)

    @staticmethod
    def _raise_cancelled() -> None:
        raise TaskCancelled()

    def run(self) -> None:
        d = self.d
        try:
            self.open()
            while self.step():
                pass
            self.end()
        except TaskCancelled:
            pass
        except BaseException as e:  # noqa: BLE001 - reported to the JobMaster, slot re-raises
            if self._cancel_requested:
                return  # in finally: closed all the same
            self.error = e
            if self._ctl is not None:
                self.send_to_job_master(
                    msg.TaskFailed(
                        d.attempt,
                        d.vertex,
                        d.subtask,
                        f"{type(e).__name__}: {e}",
                        "".join(traceback.format_exception(e)),
                    )
                )
        finally:
            self.metrics.stop()
            self.close()

    # --- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        """Connects the outputs, opens the chain (restoring its state) and reports running."""
        d = self.d
        self._ctl = self._network.control(msg.task_identity(d.attempt, d.vertex, d.subtask))
        started = time.perf_counter()
        restore_streams = StorageRestoreStreams(
            CheckpointStorage(d.restore_uri) if d.restore_uri else None,
            shares_storage=d.restore_uri is not None and d.restore_uri == d.config.storage_uri,
        )
        side_edges = any(plan.partitioner.side_output is not None for plan in d.outputs)
        for plan in d.outputs:
            channels = [
                OutputChannel(
                    self._network.output(
                        target.consumer, f"{plan.edge}:{d.subtask}:{target.channel}".encode()
                    ),
                    d.token,
                    target.channel,
                )
                for target in plan.targets
            ]
            self._partitions.append(
                ResultPartition(
                    plan.partitioner,
                    channels,
                    d.config.buffer_size,
                    d.config.max_parallelism,
                    d.chain[-1].name,
                    drop_side_outputs=side_edges,
                    encoder=BufferEncoder(_edge_type(d.chain[-1], plan.partitioner)),
                )
            )
        for spec in d.chain:
            op = create_operator(spec)
            op.open(self._operator_context(spec.uid, restore_streams))
            self._operators.append(op)
        self._source = (
            self._operators[0] if isinstance(self._operators[0], SourceOperator) else None
        )
        self._chain = self._operators[1:] if self._source else self._operators
        self._open_event_time()
        self.checkpoints = SubtaskCheckpointCoordinator(d, self, self._operators, self._pool)
        self._poller_in = self._network.poller()
        self._poller_out = self._network.poller()
        for poller in (self._poller_in, self._poller_out):
            poller.register(self._ctl, zmq.POLLIN)
            poller.register(self.mailbox.socket, zmq.POLLIN)
        if self._gate is not None:
            self._poller_in.register(self._gate.socket, zmq.POLLIN)
            if self._overtakes:  # a priority barrier wakes a backlogged task
                self._poller_out.register(self._gate.socket, zmq.POLLIN)
        for p in self._partitions:
            for c in p.channels:
                self._poller_out.register(c.socket, zmq.POLLIN)
        head_restore = d.restore.get(d.chain[0].uid) if d.restore is not None else None
        if head_restore is not None and head_restore.channel_states:
            self._restore_channel_state(head_restore, restore_streams)
        self._next_flush = time.monotonic() + d.config.buffer_timeout_s
        self.metrics.start()
        self.send_to_job_master(
            msg.TaskRunning(
                d.attempt,
                d.vertex,
                d.subtask,
                restore_bytes_read=restore_streams.bytes_read,
                restore_ms=(time.perf_counter() - started) * 1000,
            )
        )

    def _open_event_time(self) -> None:
        chain = self._chain
        # Watermarks from upstream stop at the first timestamp assigner of the chain (it makes
        # its own); the records before it have no timestamps yet.
        self._assigner_at = [i for i, op in enumerate(chain) if op.assigns_timestamps]
        first = self._assigner_at[0] if self._assigner_at else len(chain)
        self._untimed_chain = chain[:first]
        self._timed_rest = chain[first:]
        self._timer_ops = [(i, op) for i, op in enumerate(chain) if op.has_timers]
        # An assigner right after a source that tells each record's split makes watermarks
        # per split: the task hands it the splits of each batch.
        self._split_assigner = (
            chain[0]
            if self._source is not None
            and first == 0
            and chain
            and callable(getattr(self._source.reader, "last_poll_splits", None))
            else None
        )
        self._finished_splits = (
            getattr(self._source.reader, "finished_splits", None)
            if self._split_assigner is not None
            else None
        )
        # Whether this task keeps event time: at its end of input it advances its chain to the
        # end of time, firing every event-time timer.
        self._event_time = bool(self._assigner_at) or any(op.uses_event_time for op in chain)
        self._watermarks_flow = bool(self._assigner_at)  # and once a watermark came in
        self._valve = WatermarkValve(self._gate.num_channels) if self._gate is not None else None
        self._watermark_out = MIN_WATERMARK  # the last watermark sent downstream
        interval_ms = self.d.config.auto_watermark_interval_ms
        self._watermark_interval_s = interval_ms / 1000 if interval_ms > 0 else float("inf")
        self._next_watermark = time.monotonic() + self._watermark_interval_s

    def _restore_channel_state(
        self, restore: OperatorRestore, streams: StorageRestoreStreams
    ) -> None:
        """Sends the output channel state and processes the input channel state of the old
        subtasks this one takes over, before any new input. Each old subtask's data in flight
        goes to one new subtask (the old index modulo the parallelism), and records are routed
        again through the edges' partitioners; the input of a keyed chain head is split by key
        group instead, so each record meets the keyed state it belongs to."""
        d = self.d
        old_parallelism = len(restore.operator_states)
        head = d.chain[0]
        by_key_group = head.key_selector is not None and old_parallelism != d.parallelism
        partitions = {plan.edge: p for plan, p in zip(d.outputs, self._partitions, strict=True)}
        outputs, inputs = [], []
        for old_subtask, handle in restore.channel_states:
            ours = old_subtask % d.parallelism == d.subtask
            if not (ours or by_key_group):
                continue
            state = decode_channel_state(streams.read(handle))
            if ours:
                outputs += state.outputs
            inputs += [decode_buffer(b) for channel in state.inputs for b in channel.buffers]
        for output in outputs:
            partition = partitions.get(output.edge)
            if partition is None:
                raise RuntimeError(
                    f"the checkpoint holds data in flight on job edge {output.edge} from "
                    f"{d.vertex_name}, which this job does not have: an unaligned checkpoint "
                    "restores only into the same job graph (take a savepoint to change it)"
                )
            for buffer in output.buffers:
                data = decode_buffer(buffer)
                if type(data) is tuple:
                    partition.emit_timed(*data)
                else:
                    partition.emit(data)
        if by_key_group:
            own = key_group_range_for_subtask(d.config.max_parallelism, d.parallelism, d.subtask)
            key_group = KeyGroupCache(d.config.max_parallelism).key_group
            select = head.key_selector
            inputs = [_keep(data, lambda r: key_group(select(r)) in own) for data in inputs]
        for data in inputs:
            if type(data) is tuple:
                if data[0]:
                    self._process_timed(*data)
            elif data:
                self._process(data)
        for p in self._partitions:
            p.flush()
        self._backlogged()  # sends what the credit granted so far allows

    def _operator_context(
        self, uid: str, restore_streams: StorageRestoreStreams
    ) -> OperatorContext:
        d = self.d
        backend = d.config.state_backend
        name = local_state_name(uid, d.subtask)
        rocksdb = backend.keeps_local_state  # its kind works in local directories (RocksDB)
        return OperatorContext(
            subtask=d.subtask,
            parallelism=d.parallelism,
            max_parallelism=d.config.max_parallelism,
            attempt=d.attempt,
            task_name=self.name,
            checkpointing=d.config.checkpointing,
            restore=d.restore.get(uid) if d.restore is not None else None,
            restore_streams=restore_streams,
            state_backend=backend,
            job_id=d.job_id,
            job_name=d.job_name,
            local_dir=local_subtask_dir(backend, d.job_id, name, d.attempt) if rocksdb else "",
            recovery_dir=local_recovery_dir(backend, d.job_id, name)
            if rocksdb and backend.local_recovery
            else None,
            send_to_job_master=self.send_to_job_master,
            token=d.token,
            job_parameters=d.config.job_parameters,
            metrics=self.metrics.user,
        )

    def end(self) -> None:
        """After the last turn: waits until every queued buffer and event went out."""
        while self._backlogged():
            self._run_mails()
            started = time.perf_counter_ns()
            time.sleep(0.001)
            self.metrics.backpressured_ns += time.perf_counter_ns() - started
        self.send_to_job_master(msg.TaskFinished(self.d.attempt, self.d.vertex, self.d.subtask))

    def close(self) -> None:
        for op in reversed(self._operators):
            with contextlib.suppress(Exception):
                op.close()
        for p in self._partitions:
            p.close()
        if self._gate is not None:
            self._gate.close()
        if self._ctl is not None:
            self._ctl.close()
        self.mailbox.close()

    # --- the mailbox loop --------------------------------------------------------------------

    def step(self) -> bool:
        """One turn of the loop; False once the task is done."""
        if self._done:
            return False
        self._run_mails()
        if self.d.config.unaligned_checkpoints:
            self._on_time()
        if self._timer_ops and not self._finished:  # after finish(), outputs would be lost
            self._fire_processing_timers()
        if self._assigner_at and time.monotonic() >= self._next_watermark:
            self._emit_periodic_watermarks()
        if self._backlogged():
            if self._overtakes and self._gate.has_priority():
                self._on_input(*self._gate.poll_next())
            else:
                self._wait_for_credit()
            return not self._done
        source = self._source
        if source is not None and not self._finished and not self.checkpoints.sources_paused:
            batch = source.poll(self.d.config.buffer_size)
            if batch is None:
                self._end_of_input()
            elif batch:
                self.metrics.records_in += len(batch)
                if self._split_assigner is not None:
                    self._split_assigner.split_runs = source.reader.last_poll_splits()
                self._process(batch)
            else:
                self._wait_for_input(10)
            if batch is not None and self._finished_splits is not None:
                self._split_assigner.release_splits(self._finished_splits())
        elif self._gate is not None and not self._gate.is_finished:
            item = self._gate.poll_next()
            if item is None:
                wait_ms = max(0, int((self._next_flush - time.monotonic()) * 1000)) + 1
                self._wait_for_input(min(wait_ms, self._max_wait_ms))
            else:
                self._on_input(*item)
        else:
            self._maybe_terminate()
            if not self._done:
                self._wait_for_input(self._max_wait_ms)
        now = time.monotonic()
        if now >= self._next_flush:
            for p in self._partitions:
                p.flush()
            self._next_flush = now + self.d.config.buffer_timeout_s
        return not self._done

    def _wait_for_credit(self) -> None:
        """Back-pressured: an output channel has a backlog; waits for credit (or a mail)."""
        started = time.perf_counter_ns()
        self._poller_out.poll(self._max_wait_ms)
        self.metrics.backpressured_ns += time.perf_counter_ns() - started

    def _wait_for_input(self, timeout_ms: int) -> None:
        """Idle: no input to take; waits for some (or a mail)."""
        started = time.perf_counter_ns()
        self._poller_in.poll(timeout_ms)
        self.metrics.idle_ns += time.perf_counter_ns() - started

    def _on_time(self) -> None:
        now_ns = time.time_ns()
        if self._gate is not None:
            self._gate.promote_overdue(now_ns)
        self.checkpoints.on_time(now_ns)

    def _backlogged(self) -> bool:
        for p in self._partitions:
            if p.backlogged:
                p.receive_credits()
                if p.backlogged:
                    return True
        return False

    def _run_mails(self) -> None:
        ctl = self._ctl
        while ctl.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            self._on_control(msg.decode(ctl.recv()))
        self._run_mailbox()

    def _run_mailbox(self) -> None:
        """Finished snapshots (their acknowledgements) and cancellation; safe between two
        chunks of a buffer, unlike control messages, which may end the task."""
        if self.mailbox.socket.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            for mail in self.mailbox.drain():
                mail()

    def _process_input(
        self, channel: int, records: list[Any], timestamps: list[int] | None = None
    ) -> None:
        """Runs a network buffer through the chain; with unaligned checkpoints in chunks, and
        a priority barrier that arrived meanwhile is handled between two, as are finished
        snapshots (so a slow buffer delays no acknowledgement)."""
        if not self._overtakes:
            if timestamps is None:
                self._process(records)
            else:
                self._process_timed(records, timestamps)
            return
        gate, n, at = self._gate, len(records), 0
        while at < n:
            chunk = self._chunk
            started = time.perf_counter()
            whole = not at and chunk >= n
            part = records if whole else records[at : at + chunk]
            if timestamps is None:
                self._process(part)
            else:
                self._process_timed(part, timestamps if whole else timestamps[at : at + chunk])
            at += chunk
            elapsed = time.perf_counter() - started
            if elapsed > 0:  # shrink at once, grow by halves (one slow chunk is no rule)
                ideal = int(chunk * CHUNK_TARGET_S / elapsed)
                grown = ideal if ideal < chunk else (chunk + ideal) // 2
                self._chunk = max(1, min(self.d.config.buffer_size, grown))
            if at >= n:
                break
            if gate.has_priority():
                rest = records[at:]
                self._unprocessed = (
                    channel,
                    rest if timestamps is None else (rest, timestamps[at:]),
                )
                while gate.has_priority():
                    self._on_input(*gate.poll_next())
                self._unprocessed = None
            self._run_mailbox()  # a snapshot written meanwhile is acknowledged at once

    def _process(self, records: list[Any]) -> None:
        for op in self._untimed_chain:
            records = op.process_batch(records)
            if not records:
                return
        if self._timed_rest:  # a timestamp assigner: event time starts here
            self._process_timed(records, [NO_TIMESTAMP] * len(records), self._timed_rest)
            return
        if self._partitions:
            self.metrics.records_out += len(records)
        for p in self._partitions:
            p.emit(records)

    def _process_timed(
        self, records: list[Any], timestamps: list[int], chain: list[Operator] | None = None
    ) -> None:
        for op in self._chain if chain is None else chain:
            records, timestamps = op.process_timed(records, timestamps)
            if not records:
                return
        self._emit_timed(records, timestamps)

    def _emit_timed(self, records: list[Any], timestamps: list[int]) -> None:
        if self._partitions:
            self.metrics.records_out += len(records)
        for p in self._partitions:
            p.emit_timed(records, timestamps)

    # --- event time and timers ------------------------------------------------------------------

    def _advance_watermark(self, watermark: int, start: int = 0) -> None:
        """Runs ``watermark`` through the chain from operator ``start`` up to the next timestamp
        assigner (the end of time through all of them), with what fired timers emit, and sends
        it downstream if it got through the whole chain. Only a task whose input has watermarks,
        or that makes them, sends any: downstream of a task without, a task ends its own event
        time at its end of input."""
        chain = self._chain
        end = len(chain)
        if watermark < MAX_WATERMARK:
            end = next((i for i in self._assigner_at if i >= start), end)
        records: list[Any] = []
        timestamps: list[int] = []
        for op in chain[start:end]:
            if records:
                records, timestamps = op.process_timed(records, timestamps)
            fired = op.on_watermark(watermark)
            if fired is not None and fired[0]:
                records, timestamps = records + fired[0], timestamps + fired[1]
        if records:
            if end < len(chain):
                self._process_timed(records, timestamps, chain[end:])
            else:
                self._emit_timed(records, timestamps)
        if self._watermarks_flow and end == len(chain) and watermark > self._watermark_out:
            self._watermark_out = watermark
            self.broadcast_event(Kind.WATERMARK, WATERMARK.pack(watermark))

    def _on_valve(self, actions: list[ValveAction]) -> None:
        for action in actions:
            if isinstance(action, EmitWatermark):
                self._advance_watermark(action.timestamp)
            elif not self._assigner_at:  # an assigner says itself whether it is idle
                self.broadcast_event(Kind.WATERMARK_STATUS, IDLE if action.idle else ACTIVE)

    def _emit_periodic_watermarks(self) -> None:
        now_ms = time.time_ns() // 1_000_000
        last = self._assigner_at[-1]
        for i in self._assigner_at:
            watermark, idle = self._chain[i].periodic_watermark(now_ms)
            if idle is not None and i == last:
                self.broadcast_event(Kind.WATERMARK_STATUS, IDLE if idle else ACTIVE)
            if watermark is not None:
                self._advance_watermark(watermark, i + 1)
        self._next_watermark = time.monotonic() + self._watermark_interval_s

    def _fire_processing_timers(self) -> None:
        now_ms = time.time_ns() // 1_000_000
        chain = self._chain
        for i, op in self._timer_ops:
            fired = op.on_processing_time(now_ms)
            if fired is not None and fired[0]:
                self._process_timed(*fired, chain[i + 1 :])

    # --- what the checkpoint coordinator asks of the task ---------------------------------------

    def block_channel(self, channel: int) -> None:
        self._gate.block(channel)

    def unblock_all_channels(self) -> None:
        self._gate.unblock_all()

    def broadcast_event(
        self, kind: Kind, payload: bytes | None = None, deadline_ns: int | None = None
    ) -> None:
        for p in self._partitions:
            p.broadcast_event(kind, payload, deadline_ns)

    def broadcast_priority_event(self, kind: Kind, payload: bytes) -> dict[OutputKey, list[bytes]]:
        overtaken: dict[OutputKey, list[bytes]] = {}
        for plan, p in zip(self.d.outputs, self._partitions, strict=True):
            for target, buffers in enumerate(p.broadcast_priority_event(kind, payload)):
                if buffers:
                    overtaken[(plan.edge, target)] = buffers
        return overtaken

    def promote_overdue_barriers(self, now_ns: int) -> list[tuple[OutputKey, bytes, list[bytes]]]:
        return [
            ((plan.edge, target), payload, overtaken)
            for plan, p in zip(self.d.outputs, self._partitions, strict=True)
            for target, payload, overtaken in p.promote_overdue(now_ns)
        ]

    def output_holds(self, payload: bytes) -> bool:
        return any(p.holds(payload) for p in self._partitions)

    def overtake_barriers(self, checkpoint_id: int) -> None:
        self._gate.overtake(checkpoint_id)

    def unprocessed_input(
        self,
    ) -> tuple[int, list[Any] | tuple[list[Any], list[int]]] | None:
        return self._unprocessed

    def send_to_job_master(self, message: msg.Message) -> None:
        self._ctl.send(msg.encode(message))

    def run_in_task_thread(self, mail: Callable[[], None]) -> None:
        self.mailbox.put(mail)

    # --- input events ---------------------------------------------------------------------------

    def _on_input(self, channel: int, kind: Kind, payload: bytes | PriorityBarrier | None) -> None:
        if kind == Kind.BUFFER:
            self.checkpoints.on_buffer(channel, payload)
            records = decode_buffer(payload)
            if type(records) is tuple:  # with event timestamps
                self.metrics.records_in += len(records[0])
                self._process_input(channel, *records)
            else:
                self.metrics.records_in += len(records)
                self._process_input(channel, records)
        elif kind == Kind.PRIORITY_BARRIER:
            assert isinstance(payload, PriorityBarrier)
            barrier = decode_barrier(payload.payload)
            self.checkpoints.on_barrier(channel, barrier, payload.buffers_before)
        elif kind == Kind.BARRIER:
            self.checkpoints.on_barrier(channel, decode_barrier(payload))
        elif kind == Kind.CANCEL_MARKER:
            (cid,) = CHECKPOINT_ID.unpack(payload)
            self.checkpoints.on_cancel_marker(cid)
        elif kind == Kind.WATERMARK:
            self._event_time = self._watermarks_flow = True
            self._on_valve(self._valve.on_watermark(channel, WATERMARK.unpack(payload)[0]))
        elif kind == Kind.WATERMARK_STATUS:
            valve = self._valve
            self._on_valve(valve.on_idle(channel) if payload == IDLE else valve.on_active(channel))
        elif kind == Kind.END_OF_DATA:
            if payload == FINAL_SNAPSHOT_FOLLOWS:
                self._await_final = True
            actions = self._valve.on_end_of_input(channel)  # kept even before any watermark
            if self._event_time:
                self._on_valve(actions)
            self._end_of_data_channels.add(channel)
            if len(self._end_of_data_channels) == self._gate.num_channels:
                self._end_of_input()
        elif kind == Kind.END_OF_PARTITION:
            self.checkpoints.on_end_of_partition(channel)

    def _on_control(self, message: msg.AnyMessage) -> None:
        if message.attempt != self.d.attempt:
            return
        if isinstance(message, msg.TriggerCheckpoint):
            if self._source is not None:
                self.checkpoints.trigger(
                    CheckpointBarrier(message.checkpoint_id, message.timestamp_ms, message.options)
                )
        elif isinstance(message, msg.NotifyCheckpointComplete):
            self.checkpoints.notify_complete(message.checkpoint_id)
            self._maybe_terminate()
        elif isinstance(message, msg.NotifyCheckpointAborted):
            self.checkpoints.notify_aborted(message.checkpoint_id, message.references_released)
        elif isinstance(message, msg.EndInput):
            if self._source is not None and not self._finished:
                self._await_final = True
                self._end_of_input()
        elif isinstance(message, msg.CancelAttempt):
            raise TaskCancelled()

    # --- end of input ---------------------------------------------------------------------------

    def _end_of_input(self) -> None:
        """All input was read: fire every event-time timer, flush the chain, tell downstream
        and the JobMaster."""
        if self._event_time:
            self._advance_watermark(MAX_WATERMARK)
        records: list[Any] = []
        for op in self._chain:
            if records:
                records = op.process_batch(records)
            records = records + op.finish()
        if records and self._partitions:
            self.metrics.records_out += len(records)
            for p in self._partitions:
                p.emit(records)
        self._finished = True
        self.broadcast_event(
            Kind.END_OF_DATA, FINAL_SNAPSHOT_FOLLOWS if self._await_final else None
        )
        if self._source is not None:
            self.send_to_job_master(msg.EndOfInput(self.d.attempt, self.d.vertex, self.d.subtask))
        self._maybe_terminate()

    def _maybe_terminate(self) -> None:
        """The task ends (END_OF_PARTITION) once its input ended and every upstream task ended,
        and, with checkpointing or a drain, a final snapshot completed; or once a suspend
        savepoint completed (stop), without finishing its input."""
        stopped = self.checkpoints.stop_completed
        if self._done or not (self._finished or stopped):
            return
        if self._gate is not None and not self._gate.is_finished:
            return
        awaits_final = self.d.config.checkpointing or self._await_final
        if not stopped and awaits_final and not self.checkpoints.final_checkpoint_completed:
            return
        self.broadcast_event(Kind.END_OF_PARTITION)
        self._done = True
