"""Channel state: the data in flight that an unaligned checkpoint stores, and how it is recorded.

One subtask's channel state of one checkpoint is:

- **input**: per input channel, the buffers that precede barrier N on that channel and that
  the subtask had not processed when it took its snapshot (queued before the barrier when it
  arrived, taken after the snapshot, or the unprocessed rest of the buffer being processed);
- **output**: per output channel (job edge, consumer index), the buffers the barrier overtook
  in the output backlog.

Each buffer is what travels on a channel (a pickled list of records), stored as is. A restored
subtask first sends its output state downstream again (re-routed through the edge's
partitioner, so that another parallelism works), then processes its input state, before any
new input. Encoded as MessagePack with a version byte; read only after the stream's checksum
matched (``checkpoint/storage.py``). Performs no I/O.
"""

from __future__ import annotations

import msgspec

CHANNEL_STATE_VERSION = 1


class InputChannelState(msgspec.Struct, frozen=True):
    channel: int  # index in the subtask's input gate
    buffers: list[bytes]


class OutputChannelState(msgspec.Struct, frozen=True):
    edge: int  # job edge index
    target: int  # consumer index on that edge (the old one: records are routed again)
    buffers: list[bytes]


class ChannelStateSnapshot(msgspec.Struct, frozen=True):
    inputs: list[InputChannelState] = []
    outputs: list[OutputChannelState] = []


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ChannelStateSnapshot)


class ChannelStateFormatError(ValueError):
    """Channel state written by a barrierflow this one cannot read."""


def encode_channel_state(snapshot: ChannelStateSnapshot) -> bytes:
    return bytes((CHANNEL_STATE_VERSION,)) + _encoder.encode(snapshot)


def decode_channel_state(data: bytes) -> ChannelStateSnapshot:
    version = data[0] if data else None
    if version != CHANNEL_STATE_VERSION:
        raise ChannelStateFormatError(
            f"channel state version {version} is not one this barrierflow reads "
            f"({CHANNEL_STATE_VERSION})"
        )
    return _decoder.decode(data[1:])


class ChannelStateCapture:
    """Records one subtask's channel state of one checkpoint, from its snapshot until every
    input channel delivered the barrier and every output channel sent it.

    Input channels are recorded from ``record_channels`` until their ``end_channel``; the
    output side is complete once ``outputs_sent`` was called.
    """

    def __init__(self, checkpoint_id: int) -> None:
        self.checkpoint_id = checkpoint_id
        self._inputs: dict[int, list[bytes]] = {}
        self._outputs: dict[tuple[int, int], list[bytes]] = {}
        self.recording: set[int] = set()
        self._input_done = False
        self._outputs_done = False

    def record_channels(self, channels: frozenset[int]) -> None:
        self.recording |= channels

    def record(self, channel: int, buffer: bytes) -> None:
        """A buffer of a recorded channel (taken, or partly processed at the snapshot)."""
        self._inputs.setdefault(channel, []).append(buffer)

    def end_channel(self, channel: int, buffers_before: list[bytes]) -> None:
        """Barrier N arrived on ``channel``, after ``buffers_before`` (still queued)."""
        self.recording.discard(channel)
        if buffers_before:
            self._inputs.setdefault(channel, []).extend(buffers_before)

    def input_complete(self) -> None:
        self.recording.clear()
        self._input_done = True

    def add_output(self, edge: int, target: int, buffers: list[bytes]) -> None:
        if buffers:
            self._outputs.setdefault((edge, target), []).extend(buffers)

    def outputs_sent(self) -> None:
        self._outputs_done = True

    @property
    def complete(self) -> bool:
        return self._input_done and self._outputs_done

    def snapshot(self) -> ChannelStateSnapshot | None:
        """What was recorded; None when nothing was in flight."""
        if not self._inputs and not self._outputs:
            return None
        return ChannelStateSnapshot(
            [InputChannelState(c, b) for c, b in sorted(self._inputs.items())],
            [OutputChannelState(e, t, b) for (e, t), b in sorted(self._outputs.items())],
        )

    @property
    def persisted_bytes(self) -> int:
        recorded = [*self._inputs.values(), *self._outputs.values()]
        return sum(len(buffer) for buffers in recorded for buffer in buffers)
