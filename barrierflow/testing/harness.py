"""In-process test harnesses, as Flink's OneInputStreamOperatorTestHarness: drive one operator or
one StreamTask with records, barriers, end of input and control messages, and inspect what it
emitted, what it told the JobMaster and what it snapshotted. No Spark, no network.

``StreamTaskHarness`` runs the real ``StreamTask``, ``InputGate``, ``OutputChannel`` and
``SubtaskCheckpointCoordinator`` over in-memory sockets; the test plays the producers of the
task's input channels, the consumer of its one output and the JobMaster. Snapshots are written
inline (no checkpoint storage) by a pool that runs them at once, on the task thread.

``OperatorHarness`` opens one operator and calls it directly.

**Threading:** everything on the test's thread (an async operator's calls run on its own event
loop thread, and ``OperatorHarness.take_completed`` waits for them).
"""

from __future__ import annotations

import copy
import pickle
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from barrierflow.checkpoint.metadata import KeyedStateHandle, OperatorSubtaskState
from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
from barrierflow.control import messages as msg
from barrierflow.graph.execution_graph import OutputPlan, OutputTarget
from barrierflow.graph.transformation import PartitionerSpec, Partitioning, TransformationKind
from barrierflow.metrics import MetricRegistry
from barrierflow.protocol.buffer_codec import decode_buffer
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    Alignment,
    CheckpointBarrier,
    CheckpointOptions,
)
from barrierflow.protocol.frames import (
    ACTIVE,
    BUFFER_SIZE,
    CHECKPOINT_ID,
    CREDIT,
    FINAL_SNAPSHOT_FOLLOWS,
    HEADER,
    IDLE,
    WATERMARK,
    Kind,
    decode_barrier,
    encode_barrier,
    header,
)
from barrierflow.protocol.key_group_range import DEFAULT_MAX_PARALLELISM
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.buffer_debloater import DebloatSettings
from barrierflow.runtime.network.input_gate import InputGate
from barrierflow.runtime.operator_factory import create_operator
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSpec,
)
from barrierflow.runtime.task import StreamTask
from barrierflow.runtime.task_descriptor import TaskConfig, TaskDescriptor
from barrierflow.state.backends import StateBackendConfig
from barrierflow.testing.in_memory_network import InMemorySocket, InMemoryTaskNetwork
from barrierflow.testing.local_coordinator_host import LocalCoordinatorHost, RunNow

CONSUMER = ("harness-output", 0)
UNALIGNED = CheckpointOptions(alignment=Alignment.UNALIGNED)


def operator(
    kind: TransformationKind,
    function: Any,
    uid: str | None = None,
    key_selector: Callable[[Any], Any] | None = None,
    key_selector2: Callable[[Any], Any] | None = None,
) -> OperatorSpec:
    """The spec of one operator, as the JobMaster would ship it (``key_selector2``: a
    two-input operator's, of its second input)."""
    uid = uid or kind.value
    return OperatorSpec(
        uid, type(function).__name__, kind, function, key_selector, key_selector2=key_selector2
    )


@dataclass(frozen=True)
class Emitted:
    """One thing the task sent on its output channel: a buffer's records or an event."""

    kind: Kind
    records: list[Any] | None = None
    barrier: CheckpointBarrier | None = None
    checkpoint_id: int | None = None  # of a cancel marker
    timestamps: list[int] | None = None  # of a buffer's records, once the stream has event time
    watermark: int | None = None
    idle: bool | None = None  # of a watermark status


class StreamTaskHarness:
    """One subtask running ``chain``, fed by ``num_input_channels`` channels (none: the chain
    starts with a source), emitting to one consumer unless ``emits`` is False.

    The task gets a copy of each function, as a slot gets an unpickled one, so that a restored
    harness starts from the functions as they were before ``open()``."""

    def __init__(
        self,
        chain: Sequence[OperatorSpec],
        num_input_channels: int = 1,
        emits: bool = True,
        checkpointing: bool = True,
        exactly_once: bool = True,
        initial_credit: int = 2,
        output_credit: int | None = None,
        buffer_size: int = 1024,
        state_backend: StateBackendConfig | None = None,
        restore: dict[str, OperatorRestore] | None = None,
        attempt: int = 1,
        storage_uri: str | None = None,
        unaligned: bool = False,
        aligned_timeout_ms: int = 0,
        input_of_channel: tuple[int, ...] = (),
        coordinator_restore: dict[str, tuple[int, bytes | None]] | None = None,
        buffer_debloat: DebloatSettings | None = None,
    ) -> None:
        """``storage_uri``: a job root for state files (None: all state inline).
        ``unaligned``/``aligned_timeout_ms``: as the job's unaligned-checkpoint settings (the
        barriers the test sends carry their own options). ``input_of_channel``: for a head
        operator with two inputs, the input (0 or 1) of each input channel.
        ``coordinator_restore``: per operator uid, what its coordinator restores (the
        checkpoint id, its state); ``restored`` passes it. ``buffer_debloat``: the job's
        buffer debloating (None: off)."""
        self._chain = tuple(chain)
        self.token = random.getrandbits(63)
        outputs = (
            (OutputPlan(0, PartitionerSpec(Partitioning.FORWARD), (OutputTarget(CONSUMER, 0),)),)
            if emits
            else ()
        )
        self.descriptor = TaskDescriptor(
            job_id="harness",
            job_name="harness",
            attempt=attempt,
            token=self.token,
            vertex="v0",
            vertex_name=" -> ".join(s.name for s in chain),
            subtask=0,
            parallelism=1,
            chain=tuple(copy.deepcopy(s) for s in chain),
            num_input_channels=num_input_channels,
            outputs=outputs,
            config=TaskConfig(
                buffer_size=buffer_size,
                buffer_timeout_s=0.0,  # every turn flushes: outputs appear at once
                initial_credit=initial_credit,
                checkpointing=checkpointing,
                exactly_once=exactly_once,
                storage_uri=storage_uri,
                inline_threshold=1 << 30,
                write_buffer_size=4096,
                max_parallelism=DEFAULT_MAX_PARALLELISM,
                state_backend=state_backend or StateBackendConfig(),
                unaligned_checkpoints=unaligned,
                aligned_checkpoint_timeout_ms=aligned_timeout_ms,
                buffer_debloat=buffer_debloat,
            ),
            restore_uri=storage_uri if restore is not None else None,
            restore=restore,
            input_of_channel=input_of_channel,
        )
        self.network = InMemoryTaskNetwork(output_credit)
        self.gate_socket: InMemorySocket | None = None
        gate = None
        if num_input_channels:
            self.gate_socket = self.network.socket("input gate")
            gate = InputGate(self.gate_socket, num_input_channels, self.token, initial_credit)
        self._gate = gate
        self.task = StreamTask(self.descriptor, self.network, gate, RunNow())
        self._sent: dict[int, int] = {}  # per input channel, the next frame's sequence number
        self._granted: dict[int, int] = {}  # per input channel, credit not yet looked at
        self._announced: dict[int, list[int]] = {}  # per input channel, buffer sizes told
        self._emitted: list[Emitted] = []
        self._to_job_master: list[msg.AnyMessage] = []
        self._open_coordinators(coordinator_restore or {})

    # --- lifecycle ------------------------------------------------------------------------------

    def open(self) -> StreamTaskHarness:
        self.task.open()
        self._pump_coordinators()
        return self

    def turns(self, n: int) -> bool:
        """Turns the loop ``n`` times (fewer if the task is done); True while it runs."""
        for _ in range(n):
            if not self._step():
                self.task.end()
                return False
        return True

    def _step(self) -> bool:
        running = self.task.step()
        self._pump_coordinators()
        return running

    def run_until_idle(self, max_turns: int = 10_000) -> bool:
        """Turns the loop until the task waits with nothing to do, or is done; True while it
        still runs."""
        for _ in range(max_turns):
            before = self.network.idle_waits
            if not self._step():
                self.task.end()
                return False
            if self.network.idle_waits > before:
                return True
        raise AssertionError(f"the task was still busy after {max_turns} turns")

    def close(self) -> None:
        self.task.close()
        if self._gate is not None:  # a slot closes its gates, and the harness plays the slot
            self._gate.close()
        for host in self._coordinators.values():
            host.detach(0)

    # --- the coordinators' side: the JobMaster hosts them -----------------------------------------

    def _open_coordinators(self, restore: dict[str, tuple[int, bytes | None]]) -> None:
        """The coordinators of the chain's operators (a source's split enumerator), as the
        JobMaster hosts them. Their events reach the operator between two turns of the loop,
        after the control messages the task took in the turn (a trigger included), which keeps
        the JobMaster's order."""
        self._coordinators: dict[str, LocalCoordinatorHost] = {}
        self._to_coordinators: dict[str, Callable[[bytes], None]] = {}
        self._coordinator_states: dict[int, dict[str, tuple[int, bytes | None]]] = {}
        self._routed = 0  # messages to the JobMaster already looked at
        for spec in self._chain:
            host = LocalCoordinatorHost(spec, 1, restore.get(spec.uid))
            if host.coordinator is None:
                continue
            self._coordinators[spec.uid] = host
            self._to_coordinators[spec.uid] = host.attach(
                0,
                lambda payload, uid=spec.uid: self.task.chain.dispatch_operator_event(uid, payload),
            )

    def _pump_coordinators(self) -> None:
        """Hands the task's operator events to the coordinators, tells them the task runs,
        and delivers what they send back."""
        if not self._coordinators:
            return
        messages = self.sent_to_job_master()
        for message in messages[self._routed :]:
            if isinstance(message, msg.TaskRunning):
                for host in self._coordinators.values():
                    host.ready(0)
            elif isinstance(message, msg.OperatorEventToCoordinator):
                self._to_coordinators[message.operator_uid](message.payload)
        self._routed = len(messages)
        for host in self._coordinators.values():
            host.pump()

    # --- the producers' side --------------------------------------------------------------------

    def _send(self, channel: int, kind: Kind, payload: bytes | None = None) -> None:
        assert self.gate_socket is not None, "this task has no input channels"
        identity = f"producer-{channel}".encode()
        if channel not in self._sent:
            self._sent[channel] = 1
            self.gate_socket.deliver([identity, header(self.token, Kind.HELLO, channel, 0)])
        frames = [identity, header(self.token, kind, channel, self._sent[channel])]
        self._sent[channel] += 1
        self.gate_socket.deliver(frames if payload is None else [*frames, payload])

    def lose_frame(self, channel: int) -> None:
        """The next frame sent on ``channel`` is lost on the way (a broken connection)."""
        self._sent[channel] = self._sent.get(channel, 1) + 1

    def records(self, channel: int, records: list[Any]) -> None:
        self._send(channel, Kind.BUFFER, pickle.dumps(records, protocol=5))

    def timed_records(self, channel: int, records: list[Any], timestamps: list[int]) -> None:
        self._send(channel, Kind.BUFFER, pickle.dumps((records, timestamps), protocol=5))

    def watermark(self, channel: int, timestamp: int) -> None:
        self._send(channel, Kind.WATERMARK, WATERMARK.pack(timestamp))

    def watermark_status(self, channel: int, idle: bool) -> None:
        self._send(channel, Kind.WATERMARK_STATUS, IDLE if idle else ACTIVE)

    def barrier(
        self,
        channel: int,
        checkpoint_id: int,
        options: CheckpointOptions = CHECKPOINT,
        timestamp_ms: int | None = None,
    ) -> None:
        """``timestamp_ms``: when the checkpoint was triggered (it starts an aligned
        checkpoint's timeout); default: long ago."""
        stamp = 1_000 * checkpoint_id if timestamp_ms is None else timestamp_ms
        barrier = CheckpointBarrier(checkpoint_id, stamp, options)
        self._send(channel, Kind.BARRIER, encode_barrier(barrier))

    def priority_barrier(
        self, channel: int, checkpoint_id: int, options: CheckpointOptions = UNALIGNED
    ) -> None:
        """A barrier that overtook what its producer had queued (unaligned checkpoints)."""
        barrier = CheckpointBarrier(checkpoint_id, 1_000 * checkpoint_id, options)
        self._send(channel, Kind.PRIORITY_BARRIER, encode_barrier(barrier))

    def cancel_marker(self, channel: int, checkpoint_id: int) -> None:
        self._send(channel, Kind.CANCEL_MARKER, CHECKPOINT_ID.pack(checkpoint_id))

    def end_of_data(self, channel: int, final_snapshot_follows: bool = False) -> None:
        self._send(
            channel, Kind.END_OF_DATA, FINAL_SNAPSHOT_FOLLOWS if final_snapshot_follows else None
        )

    def end_of_partition(self, channel: int) -> None:
        self._send(channel, Kind.END_OF_PARTITION)

    def grant_output_credit(self, buffers: int) -> None:
        """The consumer grants the task's output channel credit for ``buffers`` more."""
        self.network.grant_credit(CONSUMER, buffers)

    def credits_returned(self) -> dict[int, int]:
        """Per channel, the credit the gate granted since the last call (HELLO included)."""
        self._take_gate_frames()
        granted, self._granted = self._granted, {}
        return granted

    def announced_buffer_sizes(self) -> dict[int, list[int]]:
        """Per input channel, every buffer size the task announced to its producer so far
        (buffer debloating), oldest first."""
        self._take_gate_frames()
        return {channel: list(sizes) for channel, sizes in self._announced.items()}

    def _take_gate_frames(self) -> None:
        """Sorts what the gate sent its producers: credits, and buffer sizes."""
        assert self.gate_socket is not None
        for frames in self.gate_socket.take_sent():
            _, kind, channel, _ = HEADER.unpack(frames[1])
            if kind == Kind.BUFFER_SIZE:
                self._announced.setdefault(channel, []).append(BUFFER_SIZE.unpack(frames[2])[0])
            else:
                assert kind == Kind.CREDIT
                credit = CREDIT.unpack(frames[2])[0]
                self._granted[channel] = self._granted.get(channel, 0) + credit

    def announce_output_buffer_size(self, records: int) -> None:
        """The consumer asks the task's output channel for buffers of ``records`` records."""
        self.network.announce_buffer_size(CONSUMER, records)

    # --- the JobMaster's side -------------------------------------------------------------------

    def control(self, message: msg.Message) -> None:
        """Sends ``message`` from the JobMaster to the task."""
        assert self.network.control_socket is not None, "open() the harness first"
        self.network.control_socket.deliver([msg.encode(message)])

    def operator_event(self, operator_uid: str, payload: bytes) -> None:
        """The JobMaster sends an operator event to operator ``operator_uid`` of the task."""
        descriptor = self.descriptor
        self.control(
            msg.OperatorEventToTask(
                descriptor.attempt, descriptor.vertex, descriptor.subtask, operator_uid, payload
            )
        )

    def trigger_checkpoint(self, checkpoint_id: int, options: CheckpointOptions = CHECKPOINT):
        """As the JobMaster does: snapshots the coordinators, then sends the trigger."""
        self._coordinator_states[checkpoint_id] = {
            uid: (checkpoint_id, host.before_snapshot(checkpoint_id, 0))
            for uid, host in self._coordinators.items()
        }
        attempt = self.descriptor.attempt
        self.control(msg.TriggerCheckpoint(attempt, checkpoint_id, 1_000, options))

    def notify_complete(self, checkpoint_id: int) -> None:
        for host in self._coordinators.values():
            host.complete(checkpoint_id)
        self.control(msg.NotifyCheckpointComplete(self.descriptor.attempt, checkpoint_id))

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.control(msg.NotifyCheckpointAborted(self.descriptor.attempt, checkpoint_id))

    def end_input(self) -> None:
        """stop --drain: the JobMaster tells a source task to end its input."""
        self.control(msg.EndInput(self.descriptor.attempt))

    def sent_to_job_master(self) -> list[msg.AnyMessage]:
        """Every message the task sent to the JobMaster so far, oldest first."""
        assert self.network.control_socket is not None
        for frames in self.network.control_socket.take_sent():
            self._to_job_master.append(msg.decode(frames[-1]))
        return list(self._to_job_master)

    def acknowledgements(self) -> list[msg.AcknowledgeCheckpoint]:
        return [m for m in self.sent_to_job_master() if isinstance(m, msg.AcknowledgeCheckpoint)]

    def declines(self) -> list[msg.DeclineCheckpoint]:
        return [m for m in self.sent_to_job_master() if isinstance(m, msg.DeclineCheckpoint)]

    # --- the consumer's side --------------------------------------------------------------------

    def emitted(self) -> list[Emitted]:
        """Everything sent on the output channel so far, in order (HELLO left out)."""
        socket = self.network.outputs.get(CONSUMER)
        for frames in socket.take_sent() if socket is not None else []:
            _, kind, _, _ = HEADER.unpack(frames[0])
            payload = frames[1] if len(frames) > 1 else None
            if kind == Kind.HELLO:
                continue
            if kind == Kind.BUFFER:
                batch = decode_buffer(payload)  # however the edge encoded it
                self._emitted.append(
                    Emitted(Kind.BUFFER, records=batch.values, timestamps=batch.timestamps)
                )
            elif kind == Kind.WATERMARK:
                watermark = WATERMARK.unpack(payload)[0]
                self._emitted.append(Emitted(Kind.WATERMARK, watermark=watermark))
            elif kind == Kind.WATERMARK_STATUS:
                self._emitted.append(Emitted(Kind.WATERMARK_STATUS, idle=payload == IDLE))
            elif kind in (Kind.BARRIER, Kind.PRIORITY_BARRIER):
                self._emitted.append(Emitted(Kind(kind), barrier=decode_barrier(payload)))
            elif kind == Kind.CANCEL_MARKER:
                cid = CHECKPOINT_ID.unpack(payload)[0]
                self._emitted.append(Emitted(Kind.CANCEL_MARKER, checkpoint_id=cid))
            else:
                self._emitted.append(Emitted(Kind(kind)))
        return list(self._emitted)

    def output_records(self) -> list[Any]:
        return [r for e in self.emitted() if e.kind == Kind.BUFFER for r in e.records]

    def output_timestamps(self) -> list[int]:
        """The timestamps of ``output_records()`` (buffers without any leave none)."""
        return [t for e in self.emitted() if e.kind == Kind.BUFFER for t in e.timestamps or ()]

    def output_watermarks(self) -> list[int]:
        return [e.watermark for e in self.emitted() if e.kind == Kind.WATERMARK]

    # --- restore --------------------------------------------------------------------------------

    def restored(self, ack: msg.AcknowledgeCheckpoint, **overrides: Any) -> StreamTaskHarness:
        """A new harness for the same chain, restoring the state of ``ack`` (as the next
        attempt would)."""
        restore = {
            uid: OperatorRestore(
                [state.operator_state],
                list(state.keyed_state),
                [(0, state.channel_state)] if state.channel_state else [],
            )
            for uid, state in ack.operator_states.items()
        }
        descriptor = self.descriptor
        settings: dict[str, Any] = {
            "num_input_channels": descriptor.num_input_channels,
            "emits": bool(descriptor.outputs),
            "checkpointing": descriptor.config.checkpointing,
            "exactly_once": descriptor.config.exactly_once,
            "initial_credit": descriptor.config.initial_credit,
            "buffer_size": descriptor.config.buffer_size,
            "state_backend": descriptor.config.state_backend,
            "attempt": descriptor.attempt + 1,
            "storage_uri": descriptor.config.storage_uri,
            "unaligned": descriptor.config.unaligned_checkpoints,
            "aligned_timeout_ms": descriptor.config.aligned_checkpoint_timeout_ms,
            "input_of_channel": descriptor.input_of_channel,
            "coordinator_restore": self._coordinator_states.get(ack.checkpoint_id),
            "buffer_debloat": descriptor.config.buffer_debloat,
        }
        settings.update(overrides)
        return StreamTaskHarness(self._chain, restore=restore, **settings)


class HarnessSubtaskState(OperatorSubtaskState, frozen=True):
    """What ``OperatorHarness.snapshot`` returns: the subtask's state, and its coordinator's
    state in the same checkpoint (a split enumerator's, a global committer's)."""

    checkpoint_id: int = 0
    coordinator_state: bytes | None = None


class OperatorHarness:
    """One operator subtask, opened and called directly; snapshots written inline. The
    operator gets a copy of ``spec``'s function, as in ``StreamTaskHarness``.

    Its coordinator (a source's split enumerator, a sink's global committer) runs in-process
    (``LocalCoordinatorHost``), shared by the subtasks made together (``subtasks``,
    ``rescaled``); each call hands over the events due between them first. Snapshot every open
    subtask of a checkpoint before reading more from them, as their triggers would."""

    def __init__(
        self,
        spec: OperatorSpec,
        checkpointing: bool = True,
        state_backend: StateBackendConfig | None = None,
        local_dir: str = "",
        restore: OperatorRestore | None = None,
        attempt: int = 1,
        subtask: int = 0,
        parallelism: int = 1,
        job_name: str = "harness",
        coordinators: LocalCoordinatorHost | None = None,
    ) -> None:
        """``coordinators``: the host of the operator's coordinator, shared with its other
        subtasks (default: one of its own, started afresh)."""
        self.spec = spec
        self._settings = {
            "checkpointing": checkpointing,
            "state_backend": state_backend or StateBackendConfig(),
            "local_dir": local_dir,
            "job_name": job_name,
        }
        self.subtask = subtask
        self.coordinators = coordinators or LocalCoordinatorHost(spec, parallelism)
        self.metrics = MetricRegistry()  # the operator's metrics: ``metrics.sample()``
        self._outputs_ready = threading.Event()  # an async operator said it has outputs
        self.operator: Operator = create_operator(copy.deepcopy(spec))
        send = self.coordinators.attach(subtask, self._receive)
        try:
            self.operator.open(
                OperatorContext(
                    subtask=subtask,
                    parallelism=parallelism,
                    max_parallelism=DEFAULT_MAX_PARALLELISM,
                    attempt=attempt,
                    task_name=f"{spec.name} ({subtask + 1}/{parallelism})",
                    checkpointing=checkpointing,
                    restore=restore,
                    restore_streams=StorageRestoreStreams(None, shares_storage=False),
                    state_backend=self._settings["state_backend"],
                    job_id=job_name,
                    job_name=job_name,
                    local_dir=local_dir,
                    metrics=self.metrics,
                    operator_events=send,
                    output_ready=self._outputs_ready.set,
                )
            )
        except BaseException:
            self.coordinators.detach(subtask)
            raise
        self.coordinators.ready(subtask)
        self.attempt = attempt

    def _receive(self, payload: bytes) -> None:
        self.operator.handle_operator_event(payload)

    @classmethod
    def subtasks(
        cls, spec: OperatorSpec, parallelism: int, **settings: Any
    ) -> list[OperatorHarness]:
        """Every subtask of the operator at ``parallelism``, started afresh."""
        host = LocalCoordinatorHost(spec, parallelism)
        return [
            cls(spec, subtask=s, parallelism=parallelism, coordinators=host, **settings)
            for s in range(parallelism)
        ]

    @classmethod
    def rescaled(
        cls,
        spec: OperatorSpec,
        states: list[OperatorSubtaskState],
        parallelism: int,
        attempt: int = 2,
        **settings: Any,
    ) -> list[OperatorHarness]:
        """Every subtask at ``parallelism``, restoring the operator state of ``states`` (one per
        old subtask) and their coordinator's, as a restore at another parallelism does.
        Operator state only."""
        if any(s.keyed_state for s in states):
            raise ValueError("OperatorHarness.rescaled restores operator state only")
        restore = OperatorRestore([s.operator_state for s in states], [])
        host = LocalCoordinatorHost(spec, parallelism, _coordinator_restore(states[0]))
        return [
            cls(
                spec,
                restore=restore,
                attempt=attempt,
                subtask=s,
                parallelism=parallelism,
                coordinators=host,
                **settings,
            )
            for s in range(parallelism)
        ]

    def poll(self, max_records: int = 100) -> list[Any] | None:
        """A source operator's next records; None at its end."""
        self.coordinators.pump()
        try:
            return self.operator.poll(max_records)
        finally:
            self.coordinators.pump(to_subtasks=False)

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        self.coordinators.pump()
        try:
            return self.operator.process_batch(batch)
        finally:
            self.coordinators.pump(to_subtasks=False)

    def process(self, records: list[Any]) -> list[Any]:
        """The outputs of ``records`` (a batch without timestamps)."""
        return self.process_batch(RecordBatch(records)).values

    def process_timed(self, records: list[Any], timestamps: list[int]) -> tuple[list, list]:
        """The outputs of ``records`` with their ``timestamps``, and the outputs' timestamps."""
        return _pair(self.process_batch(RecordBatch(records, timestamps)))

    def watermark(self, watermark: int) -> tuple[list, list]:
        """What the operator emits when event time advances to ``watermark``."""
        return _pair(self.operator.on_watermark(watermark))

    def processing_time(self, now_ms: int) -> tuple[list, list]:
        """What the operator emits when the wall clock reads ``now_ms``."""
        return _pair(self.operator.on_processing_time(now_ms))

    def finish(self) -> list[Any]:
        self.coordinators.pump()
        try:
            batch = self.operator.finish()
        finally:
            self.coordinators.pump(to_subtasks=False)
        return [] if batch is None else batch.values

    def take_completed(self, wait_s: float = 10.0) -> list[RecordBatch | int]:
        """An operator that emits asynchronously (async I/O): waits up to ``wait_s`` until it
        says it has outputs, then what it emits (batches and watermarks, in order), as the
        chain takes them on the task thread; [] if it said nothing in time."""
        if not self._outputs_ready.wait(wait_s):
            return []
        self._outputs_ready.clear()
        return self.operator.take_completed()

    def operator_event(self, payload: bytes) -> None:
        """An event from the operator's coordinator on the JobMaster, sent by the test."""
        self.operator.handle_operator_event(payload)

    def snapshot(
        self, checkpoint_id: int, options: CheckpointOptions = CHECKPOINT
    ) -> HarnessSubtaskState:
        """Both phases of a snapshot, as the subtask checkpoint coordinator runs them, after
        the coordinator's snapshot of the same checkpoint."""
        coordinator_state = self.coordinators.before_snapshot(checkpoint_id, self.subtask)
        snap = self.operator.snapshot_state(checkpoint_id, options)
        self.coordinators.pump(to_subtasks=False)
        if snap is None:
            return HarnessSubtaskState(
                0, checkpoint_id=checkpoint_id, coordinator_state=coordinator_state
            )
        streams = CheckpointStreams(None, checkpoint_id, self.spec.uid, 0, self.attempt, 1 << 30)
        operator_state = streams.write(snap.operator_state, "op") if snap.operator_state else None
        keyed: list[KeyedStateHandle] = snap.keyed(streams) if snap.keyed else []
        return HarnessSubtaskState(
            0,
            operator_state,
            keyed,
            checkpoint_id=checkpoint_id,
            coordinator_state=coordinator_state,
        )

    def notify_complete(self, checkpoint_id: int) -> None:
        self.coordinators.complete(checkpoint_id)
        self.operator.notify_checkpoint_complete(checkpoint_id)

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.operator.notify_checkpoint_aborted(checkpoint_id)

    def close(self) -> None:
        try:
            self.operator.close()
        finally:
            self.coordinators.detach(self.subtask)

    def restored(self, state: OperatorSubtaskState) -> OperatorHarness:
        """A new harness of the same operator, restoring ``state`` in its next attempt."""
        restore = OperatorRestore([state.operator_state], list(state.keyed_state))
        host = LocalCoordinatorHost(self.spec, 1, _coordinator_restore(state))
        return OperatorHarness(
            self.spec,
            restore=restore,
            attempt=self.attempt + 1,
            coordinators=host,
            **self._settings,
        )


def _coordinator_restore(state: OperatorSubtaskState) -> tuple[int, bytes | None] | None:
    """What the coordinator restores with a subtask's ``state`` (None: a fresh start)."""
    if isinstance(state, HarnessSubtaskState):
        return state.checkpoint_id, state.coordinator_state
    return None


def _pair(batch: RecordBatch | None) -> tuple[list, list]:
    """(outputs, their timestamps): a batch without timestamps gives none."""
    if batch is None:
        return [], []
    return batch.values, batch.timestamps if batch.timestamps is not None else []
