"""Wire format of data channels: a fixed header frame, then an optional payload frame.

Header: attempt token (u64: fences off frames of older attempts and strangers), kind (u8),
channel index in the consumer's input gate (u32), sequence number (u64: the frame's place in its
channel and direction, from 0 for HELLO and for the first credit). zmq reconnects a broken TCP
connection silently and may drop the frames queued in it; a receiver that finds a gap fails the
attempt (``ChannelSequenceError``), which restarts from the last checkpoint.

Buffers carry a list of records (docs/adr/0002-record-and-state-serialization.md), or, once a
stream has event timestamps, a pair (records, timestamps) of two lists of equal length: a job
without event time pays nothing for them, and the consumer tells the two apart by the type it
decodes. They are pickled, or, where the producer declared a type MessagePack holds, MessagePack
decoded to that type (``buffer_codec.py``; each buffer says which). Watermarks carry their
timestamp (i64, epoch milliseconds), watermark status frames one byte (1: the producer is idle,
0: active again); credits, buffer sizes and cancel markers a few packed integers. A consumer
sends its producers credits (buffers it has room for) and, with buffer debloating, the number
of records a buffer should hold (docs/adr/0029-buffer-debloating.md); both count in the one
sequence of that direction. A barrier carries its frame
version (u8), then the ``CheckpointBarrier`` as a MessagePack map decoded by field name: a field
added later, with a default, is read by older consumers of the same version and defaulted by
newer ones.
Performs no I/O.
"""

from __future__ import annotations

import enum
import struct

import msgspec

from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier

HEADER = struct.Struct("<QBIQ")
CHECKPOINT_ID = struct.Struct("<q")
CREDIT = struct.Struct("<I")
BUFFER_SIZE = struct.Struct("<I")  # records per buffer
WATERMARK = struct.Struct("<q")
IDLE = b"\x01"
ACTIVE = b"\x00"
BARRIER_FRAME_VERSION = 1


# END_OF_DATA's payload when a final snapshot follows that every task must wait for, even in a
# job without checkpointing (stop --drain); no payload otherwise.
FINAL_SNAPSHOT_FOLLOWS = b"\x01"


class Kind(enum.IntEnum):
    HELLO = 0  # producer -> consumer: connected, please grant credit
    BUFFER = 1
    BARRIER = 2
    CANCEL_MARKER = 3
    END_OF_DATA = 4  # no more records; barriers may still follow
    END_OF_PARTITION = 5  # nothing more at all
    CREDIT = 6  # consumer -> producer
    PRIORITY_BARRIER = 7  # a barrier that overtook the buffers queued before it
    WATERMARK = 8  # event time of the producer advanced; in band, behind its records
    WATERMARK_STATUS = 9  # the producer became idle (IDLE) or active again (ACTIVE)
    BUFFER_SIZE = 10  # consumer -> producer: records per buffer from now on (debloating)


class ChannelSequenceError(Exception):
    """Frames of a channel were lost (or came twice) between its producer and its consumer."""


def check_sequence(expected: int, got: int, what: str) -> None:
    """Raises ``ChannelSequenceError`` unless ``got`` is the ``expected`` sequence number."""
    if got != expected:
        raise ChannelSequenceError(
            f"{what}: expected frame {expected}, got frame {got}; "
            f"{'frames were lost' if got > expected else 'a frame came twice'} on the way "
            "(a network connection between executors broke and was reopened?). The attempt "
            "fails and the job restarts from its last checkpoint."
        )


class BarrierFrameError(ValueError):
    """A barrier frame this barrierflow cannot read: another version, or damaged."""


def header(token: int, kind: Kind, channel: int, sequence: int = 0) -> bytes:
    return HEADER.pack(token, kind, channel, sequence)


_barrier_encoder = msgspec.msgpack.Encoder()
_barrier_decoder = msgspec.msgpack.Decoder(CheckpointBarrier)


def encode_barrier(barrier: CheckpointBarrier) -> bytes:
    return bytes((BARRIER_FRAME_VERSION,)) + _barrier_encoder.encode(barrier)


def decode_barrier(payload: bytes) -> CheckpointBarrier:
    version = payload[0] if payload else None
    if version != BARRIER_FRAME_VERSION:
        raise BarrierFrameError(
            f"barrier frame version {version} is not one this barrierflow reads "
            f"({BARRIER_FRAME_VERSION}); do the producer and consumer run different "
            "barrierflow versions?"
        )
    try:
        return _barrier_decoder.decode(payload[1:])
    except (msgspec.DecodeError, ValueError) as e:
        raise BarrierFrameError(f"undecodable barrier frame of version {version}: {e}") from e
