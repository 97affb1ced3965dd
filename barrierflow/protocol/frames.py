"""Wire format of data channels: a fixed header frame, then an optional payload frame.

Header: attempt token (u64: fences off frames of older attempts and strangers), kind (u8),
channel index in the consumer's input gate (u32). Buffers carry a pickled list of records
(docs/adr/0002-record-and-state-serialization.md); events carry a few packed integers.
Performs no I/O.
"""

from __future__ import annotations

import enum
import struct

HEADER = struct.Struct("<QBI")
BARRIER = struct.Struct("<qq?")  # checkpoint id, timestamp ms, final
CHECKPOINT_ID = struct.Struct("<q")
CREDIT = struct.Struct("<I")


class Kind(enum.IntEnum):
    HELLO = 0  # producer -> consumer: connected, please grant credit
    BUFFER = 1
    BARRIER = 2
    CANCEL_MARKER = 3
    END_OF_DATA = 4  # no more records; barriers may still follow
    END_OF_PARTITION = 5  # nothing more at all
    CREDIT = 6  # consumer -> producer


def header(token: int, kind: Kind, channel: int) -> bytes:
    return HEADER.pack(token, kind, channel)
