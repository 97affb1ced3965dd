"""Channel state: the data in flight that an unaligned checkpoint stores, and how it is recorded.

One subtask's channel state of one checkpoint is:

- **input**: per input channel, the buffers that precede barrier N on that channel and that
  the subtask had not processed when it took its snapshot (queued before the barrier when it
  arrived, taken after the snapshot, or the unprocessed rest of the buffer being processed),
  and the input of the subtask's head operator the channel feeds (a two-input head's input 1
  or 2);
- **output**: per output channel (job edge, consumer index), the buffers the barrier overtook
  in the output backlog, and how many consumers the edge had.

Each buffer is what travels on a channel (a pickled list of records), stored as is. A restored
subtask first sends its output state downstream again (re-routed through the edge's
partitioner, so that another parallelism works), then processes its input state, before any
new input. Encoded as MessagePack with a version byte; read only after the stream's checksum
matched (``checkpoint/storage.py``). Version 1 predates two-input operators: connect's
records travelled tagged with their input into a one-input operator, so its data in flight
into (or on an edge towards) a two-input operator cannot be restored, and the snapshot says
which version wrote it (``version``). Performs no I/O.
"""

from __future__ import annotations

import msgspec

CHANNEL_STATE_VERSION = 2
_READABLE_VERSIONS = (1, 2)


class InputChannelState(msgspec.Struct, frozen=True):
    channel: int  # index in the subtask's input gate
    buffers: list[bytes]
    input: int = 0  # the input of the head operator it feeds: 0, or 1 (a two-input head's 2nd)


class OutputChannelState(msgspec.Struct, frozen=True):
    edge: int  # job edge index
    target: int  # consumer index on that edge (the old one: records are routed again)
    buffers: list[bytes]
    consumers: int = 0  # the edge's consumers then (0: not recorded, version 1)


class ChannelStateSnapshot(msgspec.Struct, frozen=True):
    inputs: list[InputChannelState] = []
    outputs: list[OutputChannelState] = []
    version: int = 1  # of the barrierflow that wrote it (absent from version 1)


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ChannelStateSnapshot)


class ChannelStateFormatError(ValueError):
    """Channel state written by a barrierflow this one cannot read."""


def encode_channel_state(snapshot: ChannelStateSnapshot) -> bytes:
    return bytes((snapshot.version,)) + _encoder.encode(snapshot)


def decode_channel_state(data: bytes) -> ChannelStateSnapshot:
    version = data[0] if data else None
    if version not in _READABLE_VERSIONS:
        raise ChannelStateFormatError(
            f"channel state version {version} is not one this barrierflow reads "
            f"({', '.join(map(str, _READABLE_VERSIONS))})"
        )
    return _decoder.decode(data[1:])


class ChannelStateCapture:
    """Records one subtask's channel state of one checkpoint, from its snapshot until every
    input channel delivered the barrier and every output channel sent it.

    Input channels are recorded from ``record_channels`` until their ``end_channel``; the
    output side is complete once ``outputs_sent`` was called.
    """

    def __init__(
        self,
        checkpoint_id: int,
        input_of_channel: tuple[int, ...] = (),
        consumers_of_edge: dict[int, int] | None = None,
    ) -> None:
        """``input_of_channel``: the input each channel feeds (empty: all the only input);
        ``consumers_of_edge``: each output edge's number of consumers."""
        self.checkpoint_id = checkpoint_id
        self._input_of_channel = input_of_channel
        self._consumers_of_edge = consumers_of_edge or {}
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
        input_of = self._input_of_channel
        consumers = self._consumers_of_edge
        return ChannelStateSnapshot(
            [
                InputChannelState(c, b, input_of[c] if input_of else 0)
                for c, b in sorted(self._inputs.items())
            ],
            [
                OutputChannelState(e, t, b, consumers.get(e, 0))
                for (e, t), b in sorted(self._outputs.items())
            ],
            CHANNEL_STATE_VERSION,
        )

    @property
    def persisted_bytes(self) -> int:
        recorded = [*self._inputs.values(), *self._outputs.values()]
        return sum(len(buffer) for buffers in recorded for buffer in buffers)
