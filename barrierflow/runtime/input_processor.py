"""What feeds a task's operator chain: its input, answering the task loop with a status.

An input turns what arrives into calls on the ``OperatorChain`` and on the subtask checkpoint
coordinator, one item per ``process_input`` call, and says how it went (``DataInputStatus``,
as Flink's): it processed something and may have more, it has nothing now, its data just ended
(the task then ends the chain's input), or nothing more will ever come.

- ``NetworkInput`` (one input): the buffers, watermarks, barriers, cancel markers and
  end-of-data/end-of-partition events of the task's ``InputGate``. Buffers are decoded into
  ``RecordBatch`` es and run through the chain; with unaligned checkpoints a buffer runs in
  chunks of about a millisecond, with a look at the gate between two (a priority barrier
  that arrived meanwhile is handled there, and the rest of the buffer becomes channel state).
  The watermarks of the channels are combined by a ``WatermarkValve``.
- ``TwoInputNetworkInput``: the same gate, whose channels belong to input 1 or input 2 (the
  job graph's edges say which); buffers go to the head operator's ``process_batch`` or
  ``process_batch2``, each input has its own valve, and the task's watermark is the minimum of
  the two (an idle input left out), as Flink's two-input operators combine them. Barriers
  align over all channels, as for one input.
- ``SourceInput`` (``runtime/source_input.py``): polls the chain's source operator.

**Threading:** the task thread only. **I/O:** the input gate's socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from barrierflow.eventtime.watermark_valve import (
    EmitWatermark,
    ValveAction,
    WatermarkValve,
)
from barrierflow.protocol.buffer_codec import decode_buffer
from barrierflow.protocol.frames import (
    CHECKPOINT_ID,
    FINAL_SNAPSHOT_FOLLOWS,
    IDLE,
    WATERMARK,
    Kind,
    decode_barrier,
)
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.input_gate import InputGate, PriorityBarrier
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.subtask_checkpoint_coordinator import SubtaskCheckpointCoordinator
from barrierflow.runtime.task_metrics import TaskIOMetrics

CHUNK_TARGET_S = 0.001  # unaligned: how long a chunk of a buffer may run before a look at
# the input gate for a priority barrier
_CHUNK_MEMORY = 0.75  # the weight of the chunks before the last in the cost per record


class ChunkSizer:
    """How many records of a buffer run before the next look at the input gate: about
    ``CHUNK_TARGET_S`` of work at the recent cost per record.

    The cost is an average over the recent chunks, weighted by their records, not the last
    chunk's alone: where records cost very different amounts (a slow call every few records),
    a chunk of cheap records alone would promise that a hundred more take a millisecond, and
    the next chunk would run for a hundred milliseconds while a priority barrier waits. A
    chunk at most doubles from one to the next.

    Performs no I/O."""

    __slots__ = ("_limit", "_records", "_spent_s", "size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.size = min(64, limit)
        self._spent_s = 0.0
        self._records = 0.0

    def ran(self, records: int, elapsed_s: float) -> None:
        """A chunk of ``records`` took ``elapsed_s``; sets the next ``size``."""
        self._spent_s = self._spent_s * _CHUNK_MEMORY + elapsed_s
        self._records = self._records * _CHUNK_MEMORY + records
        spent = self._spent_s
        ideal = int(CHUNK_TARGET_S * self._records / spent) if spent > 0 else self._limit
        self.size = max(1, min(self._limit, 2 * records, ideal))


class DataInputStatus(Enum):
    MORE_AVAILABLE = "more available"  # it processed something; ask again
    NOTHING_AVAILABLE = "nothing available"  # wait for input
    END_OF_DATA = "end of data"  # the data ended with this call: end the chain's input
    END_OF_INPUT = "end of input"  # nothing more will come


class InputKind(Enum):
    NETWORK = "network"  # upstream tasks
    SOURCE = "source"  # a source operator: takes checkpoint triggers and EndInput


class NetworkInput:
    """The input gate of a one-input task, feeding the chain."""

    kind = InputKind.NETWORK
    poll_interval_ms = float("inf")  # the gate's socket wakes the task when input arrives

    def __init__(
        self,
        gate: InputGate,
        chain: OperatorChain,
        checkpoints: SubtaskCheckpointCoordinator,
        metrics: TaskIOMetrics,
        buffer_size: int,
        unaligned: bool,
        run_mailbox: Callable[[], None],
    ) -> None:
        """``run_mailbox``: runs the task's mails that are safe between two chunks of a
        buffer (finished snapshots, cancellation)."""
        self.gate = gate
        self._run_mailbox = run_mailbox
        self._chain = chain
        self._checkpoints = checkpoints
        self._metrics = metrics
        self.overtakes = unaligned  # look for priority barriers while busy or backlogged
        self._chunks = ChunkSizer(buffer_size)
        self._unprocessed: tuple[int, RecordBatch] | None = None  # of a chunked buffer
        self._valve = WatermarkValve(gate.num_channels)
        self._event_time = chain.keeps_event_time  # or once a watermark came in
        self._end_of_data_channels: set[int] = set()
        self.final_snapshot_follows = False  # upstream ended its input for a final snapshot

    @property
    def is_finished(self) -> bool:
        """Every channel delivered END_OF_PARTITION."""
        return self.gate.is_finished

    def process_input(self) -> DataInputStatus:
        gate = self.gate
        if gate.is_finished:
            return DataInputStatus.END_OF_INPUT
        item = gate.poll_next()
        if item is None:
            return DataInputStatus.NOTHING_AVAILABLE
        return self._on_input(*item)

    def process_priority_events(self) -> bool:
        """While the task is back-pressured: handles a priority barrier if one waits."""
        if self.overtakes and self.gate.has_priority():
            item = self.gate.poll_next()
            assert item is not None  # the priority barrier
            self._on_input(*item)
            return True
        return False

    def on_time(self, now_ns: int) -> None:
        self.gate.promote_overdue(now_ns)

    # --- what the subtask checkpoint coordinator asks of the input ------------------------------

    def block_channel(self, channel: int) -> None:
        self.gate.block(channel)

    def unblock_all_channels(self) -> None:
        self.gate.unblock_all()

    def overtake_barriers(self, checkpoint_id: int) -> None:
        """The barriers of ``checkpoint_id`` in the gate, queued or to come, become priority
        barriers."""
        self.gate.overtake(checkpoint_id)

    def unprocessed_input(self) -> tuple[int, RecordBatch] | None:
        """The channel and the records not processed yet of the buffer being processed."""
        return self._unprocessed

    # --- input events ---------------------------------------------------------------------------

    def _on_input(
        self, channel: int, kind: Kind, payload: bytes | PriorityBarrier | None
    ) -> DataInputStatus:
        # the kind says what the payload is: a barrier taken out of its queue is a
        # PriorityBarrier; a frame's body is bytes (an event may have none)
        if kind == Kind.BUFFER:
            assert isinstance(payload, bytes)
            self._checkpoints.on_buffer(channel, payload)
            batch = decode_buffer(payload)
            self._metrics.took_in(len(batch.values))
            self._process_buffer(channel, batch)
        elif kind == Kind.PRIORITY_BARRIER:
            assert isinstance(payload, PriorityBarrier)
            barrier = decode_barrier(payload.payload)
            self._checkpoints.on_barrier(channel, barrier, payload.buffers_before)
        elif kind == Kind.BARRIER:
            assert isinstance(payload, bytes)
            self._checkpoints.on_barrier(channel, decode_barrier(payload))
        elif kind == Kind.CANCEL_MARKER:
            assert isinstance(payload, bytes)
            (cid,) = CHECKPOINT_ID.unpack(payload)
            self._checkpoints.on_cancel_marker(cid)
        elif kind == Kind.WATERMARK:
            assert isinstance(payload, bytes)
            self._event_time = True
            self._chain.watermarks_arrived()
            self._on_watermark(channel, WATERMARK.unpack(payload)[0])
        elif kind == Kind.WATERMARK_STATUS:
            self._on_watermark_status(channel, payload == IDLE)
        elif kind == Kind.END_OF_DATA:
            if payload == FINAL_SNAPSHOT_FOLLOWS:
                self.final_snapshot_follows = True
            self._on_end_of_data(channel)
            self._end_of_data_channels.add(channel)
            if len(self._end_of_data_channels) == self.gate.num_channels:
                return DataInputStatus.END_OF_DATA
        elif kind == Kind.END_OF_PARTITION:
            self._checkpoints.on_end_of_partition(channel)
        return DataInputStatus.MORE_AVAILABLE

    def _process(self, channel: int, batch: RecordBatch) -> None:
        """One input: every channel's records go to the head of the chain."""
        self._chain.process(batch)

    def _process_buffer(self, channel: int, batch: RecordBatch) -> None:
        """Runs a network buffer through the chain; with unaligned checkpoints in chunks, and
        a priority barrier that arrived meanwhile is handled between two, as are finished
        snapshots (so a slow buffer delays no acknowledgement)."""
        if not self.overtakes:
            self._process(channel, batch)
            return
        gate, n, at = self.gate, len(batch.values), 0
        chunks = self._chunks
        while at < n:
            chunk = min(chunks.size, n - at)
            started = time.perf_counter()
            self._process(channel, batch if chunk == n else batch.slice(at, at + chunk))
            at += chunk
            chunks.ran(chunk, time.perf_counter() - started)
            if at >= n:
                break
            if gate.has_priority():
                self._unprocessed = (channel, batch.slice(at))
                while gate.has_priority():
                    item = gate.poll_next()
                    assert item is not None  # the priority barrier
                    self._on_input(*item)
                self._unprocessed = None
            self._run_mailbox()  # a snapshot written meanwhile is acknowledged at once

    # --- watermarks -----------------------------------------------------------------------------

    def _on_watermark(self, channel: int, watermark: int) -> None:
        self._on_valve(self._valve.on_watermark(channel, watermark))

    def _on_watermark_status(self, channel: int, idle: bool) -> None:
        valve = self._valve
        self._on_valve(valve.on_idle(channel) if idle else valve.on_active(channel))

    def _on_end_of_data(self, channel: int) -> None:
        actions = self._valve.on_end_of_input(channel)  # kept even before any watermark
        if self._event_time:
            self._on_valve(actions)

    def _on_valve(self, actions: list[ValveAction]) -> None:
        for action in actions:
            if isinstance(action, EmitWatermark):
                self._chain.advance_watermark(action.timestamp)
            else:
                self._chain.on_input_idleness(action.idle)


class TwoInputNetworkInput(NetworkInput):
    """The input gate of a task whose head operator takes two inputs: ``input_of_channel[c]``
    is 0 or 1, the input channel ``c`` belongs to."""

    def __init__(self, gate: InputGate, input_of_channel: tuple[int, ...], **kwargs: Any) -> None:
        super().__init__(gate, **kwargs)
        if len(input_of_channel) != gate.num_channels or set(input_of_channel) != {0, 1}:
            raise ValueError(
                f"a two-input task needs each of its {gate.num_channels} input channels "
                f"assigned to input 0 or 1, and both inputs fed; got {input_of_channel}: the "
                "job graph gave the task's head operator a wrong set of input edges"
            )
        self._input_of = input_of_channel
        # each channel's index among the channels of its input, for that input's valve
        self._local = [input_of_channel[:c].count(i) for c, i in enumerate(input_of_channel)]
        self._valves = [WatermarkValve(input_of_channel.count(i)) for i in (0, 1)]
        self._combined = WatermarkValve(2)  # the minimum of the two inputs' watermarks

    def _process(self, channel: int, batch: RecordBatch) -> None:
        if self._input_of[channel] == 0:
            self._chain.process(batch)
        else:
            self._chain.process_second_input(batch)

    def _on_watermark(self, channel: int, watermark: int) -> None:
        input_index = self._input_of[channel]
        valve = self._valves[input_index]
        self._on_input_valve(input_index, valve.on_watermark(self._local[channel], watermark))

    def _on_watermark_status(self, channel: int, idle: bool) -> None:
        input_index, local = self._input_of[channel], self._local[channel]
        valve = self._valves[input_index]
        self._on_input_valve(input_index, valve.on_idle(local) if idle else valve.on_active(local))

    def _on_end_of_data(self, channel: int) -> None:
        input_index = self._input_of[channel]
        actions = self._valves[input_index].on_end_of_input(self._local[channel])
        if self._event_time:
            self._on_input_valve(input_index, actions)

    def _on_input_valve(self, input_index: int, actions: list[ValveAction]) -> None:
        """What one input's valve decided goes into the valve that combines the inputs."""
        combined = self._combined
        for action in actions:
            if isinstance(action, EmitWatermark):
                self._on_valve(combined.on_watermark(input_index, action.timestamp))
            elif action.idle:
                self._on_valve(combined.on_idle(input_index))
            else:
                self._on_valve(combined.on_active(input_index))
