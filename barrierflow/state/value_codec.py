"""How a state value becomes the bytes of a RocksDB row: MessagePack by the state's declared type
where MessagePack holds it (``ValueStateDescriptor("count", Types.LONG())``), pickle otherwise
(no type, a type MessagePack does not hold as declared, a time to live).

Every access to RocksDB state writes or reads one value, so its encoding is on the per-record
path: msgspec encodes a LONG or a tuple about three times faster than pickle and decodes it as
fast, and decoding runs no code from the bytes (``docs/benchmarks.md``). Values are checked
against their declared type before they are stored (``typed_state.py``), so what is encoded
decodes to the type (a TUPLE given as a list comes back a tuple).

A value says how it was written, as a buffer does (``protocol/buffer_codec.py``): pickle's
bytes start with 0x80, a typed value with ``TYPED_VALUE`` and its type signature
(``declared_types/msgpack_types.py``). So any reader decodes any row whatever the reading job
declares: a snapshot written as canonical savepoint, a restore of RocksDB files into a job
that declares another type or none, a value written before the type was declared. Performs no
I/O.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

import msgspec

from barrierflow.common.typeinfo import Types
from barrierflow.declared_types.msgpack_types import (
    ENCODE_ERRORS,
    header,
    msgspec_type,
    read_header,
    signature,
)
from barrierflow.state.descriptors import StateDescriptor, StateKind

TYPED_VALUE = 0x03
DECODE_AGAIN = pickle.UnpicklingError  # ValueCodec.decode's: decode_value reads the row
_PICKLE = 0x80  # protocol 2 and above


@functools.cache
def _decoder(sig: str) -> msgspec.msgpack.Decoder[Any]:
    return msgspec.msgpack.Decoder(msgspec_type(sig))


def decode_value(raw: bytes) -> Any:
    """A stored value, however it was written."""
    marker = raw[0]
    if marker == _PICKLE:
        return pickle.loads(raw)
    if marker != TYPED_VALUE:
        raise ValueError(f"a state value of an unknown encoding (first byte 0x{marker:02x})")
    sig, body = read_header(raw)
    return _decoder(sig).decode(raw[body:])


# pickle.dumps itself (its default protocol, 4: values carry no out-of-band buffers), no wrapper
# around it: a call on the per-record path costs as much as a small value's encoding.
_pickled = pickle.dumps


class ValueCodec:
    """The encoding of one state's values (``encode``, ``decode``): typed by its signature, or
    pickle. A value MessagePack cannot hold (an int beyond 64 bits) is pickled. ``state``: the
    state's name, for errors.

    Without a type, ``decode`` is ``pickle.loads`` itself, so that a state without one pays
    nothing on its per-record path; it raises ``UnpicklingError`` on a row written while the
    state had a type, which the caller then decodes with ``decode_value``
    (``DECODE_AGAIN``)."""

    __slots__ = ("decode", "encode", "typed")

    def __init__(self, sig: str | None, state: str = "") -> None:
        self.typed = sig is not None
        if sig is None:
            self.encode: Callable[[Any], bytes] = _pickled
            self.decode: Callable[[bytes], Any] = pickle.loads
            return
        head = header(TYPED_VALUE, sig)
        start = len(head)
        to_bytes = msgspec.msgpack.Encoder().encode
        from_bytes = _decoder(sig).decode

        def encode(value: Any) -> bytes:
            try:
                return head + to_bytes(value)
            except ENCODE_ERRORS:
                return _pickled(value)

        def decode(raw: bytes) -> Any:
            if raw[:start] == head:
                try:
                    return from_bytes(raw[start:])
                except msgspec.ValidationError as e:
                    raise ValueError(f"state {state!r}: a stored value is not a {sig}: {e}") from e
            return decode_value(raw)  # pickled, or written under another type

        self.encode, self.decode = encode, decode


def codec_for(descriptor: StateDescriptor) -> ValueCodec:
    """The codec of a RocksDB row of ``descriptor``'s state: the value of a value state, the
    whole list of a list state, one entry's value of a map state."""
    if descriptor.ttl is not None:
        return ValueCodec(None)  # rows hold values stamped with their time
    type_info = descriptor.type_info
    if descriptor.kind is StateKind.MAP:
        type_info = type_info[1] if isinstance(type_info, tuple) else None
    elif descriptor.kind is StateKind.LIST and type_info is not None:
        type_info = Types.LIST(type_info)
    return ValueCodec(signature(type_info), descriptor.name)
