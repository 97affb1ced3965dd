"""How a buffer's records become bytes: MessagePack by the declared type where the producer
declared one that MessagePack holds, pickle otherwise.

A PyFlink program declares types (``output_type=Types.TUPLE([Types.STRING(), Types.LONG()])``)
and its values are converted to them (``declared_types/conversion.py``), so an edge knows
what its records are. For such an edge, msgspec encodes the buffer as MessagePack and decodes
it to the declared Python type: faster than pickle for tuples, fewer bytes, and, unlike
pickle, decoding runs no code from the bytes and checks that they are what the type says
(``docs/benchmarks.md``). Every other edge keeps pickle.

A buffer is a ``RecordBatch``; its bytes are those of the values alone, or, with a timestamp
column, of the pair (values, timestamps). A buffer says how it was written, so that every
reader (the task, an unaligned checkpoint's channel state, a restore) decodes it without
knowing the edge: pickle's bytes start with 0x80; a typed buffer with ``TYPED`` or
``TYPED_TIMED``, then the type signature of its records (``declared_types/msgpack_types.py``),
then the MessagePack body. The layout is the one buffers had before batches had columns, so
channel state written by older versions reads as it did.
Performs no I/O.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any

import msgspec

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.declared_types.msgpack_types import (
    ENCODE_ERRORS,
    header,
    msgspec_type,
    read_header,
    signature,
)
from barrierflow.protocol.record_batch import RecordBatch

TYPED = 0x01  # a list of records
TYPED_TIMED = 0x02  # a pair: the records, their event timestamps


@functools.cache
def _decoders(sig: str) -> tuple[msgspec.msgpack.Decoder[Any], msgspec.msgpack.Decoder[Any]]:
    element = msgspec_type(sig)
    # the types are made at run time, from the signature a buffer names: no static type
    return (
        msgspec.msgpack.Decoder(list[element]),  # type: ignore[valid-type]
        msgspec.msgpack.Decoder(tuple[list[element], list[int]]),  # type: ignore[valid-type]
    )


class BufferEncoder:
    """The encoder of one edge: typed when its declared type allows, else pickle. A buffer
    MessagePack cannot hold as declared (an int beyond 64 bits) goes as pickle."""

    def __init__(self, type_info: TypeInformation | None) -> None:
        sig = signature(type_info)
        self.typed = sig is not None
        if sig is not None:
            self._untimed = header(TYPED, sig)
            self._timed = header(TYPED_TIMED, sig)
            self._encoder = msgspec.msgpack.Encoder()

    def encode(self, batch: RecordBatch) -> bytes:
        values, timestamps = batch.values, batch.timestamps
        if self.typed:
            try:
                if timestamps is None:
                    return self._untimed + self._encoder.encode(values)
                return self._timed + self._encoder.encode((values, timestamps))
            except ENCODE_ERRORS:
                pass
        return pickle.dumps(values if timestamps is None else (values, timestamps), protocol=5)


def decode_buffer(payload: bytes) -> RecordBatch:
    """A buffer's records, with their timestamps if it has them: however it was written."""
    marker = payload[0]
    if marker != TYPED and marker != TYPED_TIMED:
        data = pickle.loads(payload)
        return RecordBatch(*data) if type(data) is tuple else RecordBatch(data)
    sig, body = read_header(payload)
    untimed, timed = _decoders(sig)
    if marker == TYPED:
        return RecordBatch(untimed.decode(payload[body:]))
    values, timestamps = timed.decode(payload[body:])
    return RecordBatch(values, timestamps)
