"""In-process test harnesses, as Flink's OneInputStreamOperatorTestHarness: drive one operator or
one StreamTask with records, barriers, end of input and control messages, and inspect what it
emitted, what it told the JobMaster and what it snapshotted. No Spark, no network.

``StreamTaskHarness`` runs the real ``StreamTask``, ``InputGate``, ``OutputChannel`` and
``SubtaskCheckpointCoordinator`` over in-memory sockets; the test plays the producers of the
task's input channels, the consumer of its one output and the JobMaster. Snapshots are written
inline (no checkpoint storage) by a pool that runs them at once, on the task thread.

``OperatorHarness`` opens one operator and calls it directly.

**Threading:** everything on the test's thread.
"""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
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
from barrierflow.protocol.record_batch import RecordBatch
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
from barrierflow.state.key_groups import DEFAULT_MAX_PARALLELISM
from barrierflow.testing.in_memory_network import InMemorySocket, InMemoryTaskNetwork

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


class _RunNow(Executor):
    """Runs each submitted function at once, on the caller's thread."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - kept in the future, as a pool would
            future.set_exception(e)
        return future


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
    ) -> None:
        """``storage_uri``: a job root for state files (None: all state inline).
        ``unaligned``/``aligned_timeout_ms``: as the job's unaligned-checkpoint settings (the
        barriers the test sends carry their own options). ``input_of_channel``: for a head
        operator with two inputs, the input (0 or 1) of each input channel."""
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
        self.task = StreamTask(self.descriptor, self.network, gate, _RunNow())
        self._sent: dict[int, int] = {}  # per input channel, the next frame's sequence number
        self._emitted: list[Emitted] = []
        self._to_job_master: list[msg.AnyMessage] = []

    # --- lifecycle ------------------------------------------------------------------------------

    def open(self) -> StreamTaskHarness:
        self.task.open()
        return self

    def turns(self, n: int) -> bool:
        """Turns the loop ``n`` times (fewer if the task is done); True while it runs."""
        for _ in range(n):
            if not self.task.step():
                self.task.end()
                return False
        return True

    def run_until_idle(self, max_turns: int = 10_000) -> bool:
        """Turns the loop until the task waits with nothing to do, or is done; True while it
        still runs."""
        for _ in range(max_turns):
            before = self.network.idle_waits
            if not self.task.step():
                self.task.end()
                return False
            if self.network.idle_waits > before:
                return True
        raise AssertionError(f"the task was still busy after {max_turns} turns")

    def close(self) -> None:
        self.task.close()

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
        granted: dict[int, int] = {}
        assert self.gate_socket is not None
        for frames in self.gate_socket.take_sent():
            _, kind, channel, _ = HEADER.unpack(frames[1])
            assert kind == Kind.CREDIT
            granted[channel] = granted.get(channel, 0) + CREDIT.unpack(frames[2])[0]
        return granted

    # --- the JobMaster's side -------------------------------------------------------------------

    def control(self, message: msg.Message) -> None:
        """Sends ``message`` from the JobMaster to the task."""
        assert self.network.control_socket is not None, "open() the harness first"
        self.network.control_socket.deliver([msg.encode(message)])

    def operator_event(self, operator_uid: str, payload: bytes) -> None:
        """The JobMaster sends an operator event to operator ``operator_uid`` of the task."""
        d = self.descriptor
        self.control(msg.OperatorEventToTask(d.attempt, d.vertex, d.subtask, operator_uid, payload))

    def trigger_checkpoint(self, checkpoint_id: int, options: CheckpointOptions = CHECKPOINT):
        attempt = self.descriptor.attempt
        self.control(msg.TriggerCheckpoint(attempt, checkpoint_id, 1_000, options))

    def notify_complete(self, checkpoint_id: int) -> None:
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
        d = self.descriptor
        settings: dict[str, Any] = {
            "num_input_channels": d.num_input_channels,
            "emits": bool(d.outputs),
            "checkpointing": d.config.checkpointing,
            "exactly_once": d.config.exactly_once,
            "initial_credit": d.config.initial_credit,
            "buffer_size": d.config.buffer_size,
            "state_backend": d.config.state_backend,
            "attempt": d.attempt + 1,
            "storage_uri": d.config.storage_uri,
            "unaligned": d.config.unaligned_checkpoints,
            "aligned_timeout_ms": d.config.aligned_checkpoint_timeout_ms,
            "input_of_channel": d.input_of_channel,
        }
        settings.update(overrides)
        return StreamTaskHarness(self._chain, restore=restore, **settings)


class OperatorHarness:
    """One operator subtask, opened and called directly; snapshots written inline. The
    operator gets a copy of ``spec``'s function, as in ``StreamTaskHarness``."""

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
    ) -> None:
        self.spec = spec
        self._settings = {
            "checkpointing": checkpointing,
            "state_backend": state_backend or StateBackendConfig(),
            "local_dir": local_dir,
            "job_name": job_name,
        }
        self.subtask = subtask
        self.metrics = MetricRegistry()  # the operator's metrics: ``metrics.sample()``
        self.operator: Operator = create_operator(copy.deepcopy(spec))
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
            )
        )
        self.attempt = attempt

    @classmethod
    def subtasks(
        cls, spec: OperatorSpec, parallelism: int, **settings: Any
    ) -> list[OperatorHarness]:
        """Every subtask of the operator at ``parallelism``, started afresh."""
        return [
            cls(spec, subtask=s, parallelism=parallelism, **settings) for s in range(parallelism)
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
        old subtask), as a restore at another parallelism does. Operator state only."""
        if any(s.keyed_state for s in states):
            raise ValueError("OperatorHarness.rescaled restores operator state only")
        restore = OperatorRestore([s.operator_state for s in states], [])
        return [
            cls(
                spec,
                restore=restore,
                attempt=attempt,
                subtask=s,
                parallelism=parallelism,
                **settings,
            )
            for s in range(parallelism)
        ]

    def poll(self, max_records: int = 100) -> list[Any] | None:
        """A source operator's next records; None at its end."""
        return self.operator.poll(max_records)

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        return self.operator.process_batch(batch)

    def process(self, records: list[Any]) -> list[Any]:
        """The outputs of ``records`` (a batch without timestamps)."""
        return self.operator.process_batch(RecordBatch(records)).values

    def process_timed(self, records: list[Any], timestamps: list[int]) -> tuple[list, list]:
        """The outputs of ``records`` with their ``timestamps``, and the outputs' timestamps."""
        return _pair(self.operator.process_batch(RecordBatch(records, timestamps)))

    def watermark(self, watermark: int) -> tuple[list, list]:
        """What the operator emits when event time advances to ``watermark``."""
        return _pair(self.operator.on_watermark(watermark))

    def processing_time(self, now_ms: int) -> tuple[list, list]:
        """What the operator emits when the wall clock reads ``now_ms``."""
        return _pair(self.operator.on_processing_time(now_ms))

    def finish(self) -> list[Any]:
        batch = self.operator.finish()
        return [] if batch is None else batch.values

    def operator_event(self, payload: bytes) -> None:
        """An event from the operator's coordinator on the JobMaster."""
        self.operator.handle_operator_event(payload)

    def snapshot(
        self, checkpoint_id: int, options: CheckpointOptions = CHECKPOINT
    ) -> OperatorSubtaskState:
        """Both phases of a snapshot, as the subtask checkpoint coordinator runs them."""
        snap = self.operator.snapshot_state(checkpoint_id, options)
        if snap is None:
            return OperatorSubtaskState(0)
        streams = CheckpointStreams(None, checkpoint_id, self.spec.uid, 0, self.attempt, 1 << 30)
        operator_state = streams.write(snap.operator_state, "op") if snap.operator_state else None
        keyed: list[KeyedStateHandle] = snap.keyed(streams) if snap.keyed else []
        return OperatorSubtaskState(0, operator_state, keyed)

    def notify_complete(self, checkpoint_id: int) -> None:
        self.operator.notify_checkpoint_complete(checkpoint_id)

    def notify_aborted(self, checkpoint_id: int) -> None:
        self.operator.notify_checkpoint_aborted(checkpoint_id)

    def close(self) -> None:
        self.operator.close()

    def restored(self, state: OperatorSubtaskState) -> OperatorHarness:
        """A new harness of the same operator, restoring ``state`` in its next attempt."""
        restore = OperatorRestore([state.operator_state], list(state.keyed_state))
        return OperatorHarness(
            self.spec, restore=restore, attempt=self.attempt + 1, **self._settings
        )


def _pair(batch: RecordBatch | None) -> tuple[list, list]:
    """(outputs, their timestamps): a batch without timestamps gives none."""
    if batch is None:
        return [], []
    return batch.values, batch.timestamps if batch.timestamps is not None else []
