"""How a buffer's records become bytes: MessagePack by the declared type where the producer
declared one that MessagePack holds, pickle otherwise.

A PyFlink program declares types (``output_type=Types.TUPLE([Types.STRING(), Types.LONG()])``)
and its values are converted to them (``type_conversion.py``), so an edge knows what its
records are. For such an edge, msgspec encodes the buffer as MessagePack and decodes it to the
declared Python type: faster than pickle for tuples, fewer bytes, and, unlike pickle, decoding
runs no code from the bytes and checks that they are what the type says
(``docs/benchmarks.md``). Every other edge keeps pickle.

A buffer says how it was written, so that every reader (the task, an unaligned checkpoint's
channel state, a restore) decodes it without knowing the edge: pickle's bytes start with
0x80; a typed buffer with ``TYPED`` or ``TYPED_TIMED``, then the length and the text of a
type signature (``t(s,i)``: a tuple of a string and an int; ``i`` int, ``s`` str, ``f``
float, ``b`` bool, ``l(x)`` list of x; every value may be None), then the MessagePack body.
A signature is parsed into msgspec types only (no code), at most once per signature.
Performs no I/O.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any, Optional

import msgspec

from barrierflow.typeinfo import TypeInformation

TYPED = 0x01  # a list of records
TYPED_TIMED = 0x02  # a pair: the records, their event timestamps

_SCALARS = {
    "BYTE": "i", "SHORT": "i", "INT": "i", "LONG": "i", "BIG_INT": "i",
    "STRING": "s", "CHAR": "s", "FLOAT": "f", "DOUBLE": "f", "BOOLEAN": "b",
}  # fmt: skip
_LISTS = ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY")
_PYTHON = {"i": int, "s": str, "f": float, "b": bool}
_MAX_SIGNATURE = 200


def signature(type_info: TypeInformation | None) -> str | None:
    """The signature of ``type_info``, or None when MessagePack cannot hold it as declared."""
    if type_info is None:
        return None
    if type_info.name in _SCALARS:
        return _SCALARS[type_info.name]
    if type_info.name == "TUPLE" or type_info.name in _LISTS:
        inner = [signature(t) for t in type_info.fields]
        if None in inner:
            return None
        return ("t(" if type_info.name == "TUPLE" else "l(") + ",".join(inner) + ")"
    return None


def _parse(text: str, at: int = 0) -> tuple[Any, int]:
    """The msgspec type of the signature at ``text[at:]`` and where it ends."""
    kind = text[at]
    if kind in _PYTHON:
        return Optional[_PYTHON[kind]], at + 1  # noqa: UP045 - a runtime type object
    if kind not in "tl" or text[at + 1] != "(":
        raise ValueError(f"buffer type signature {text!r} is malformed at {at}")
    items, at = [], at + 2
    while True:
        item, at = _parse(text, at)
        items.append(item)
        if text[at] == ")":
            break
        if text[at] != ",":
            raise ValueError(f"buffer type signature {text!r} is malformed at {at}")
        at += 1
    if kind == "l":
        if len(items) != 1:
            raise ValueError(f"buffer type signature {text!r}: a list has one element type")
        return Optional[list[items[0]]], at + 1  # noqa: UP045
    return Optional[tuple[tuple(items)]], at + 1  # noqa: UP045


@functools.cache
def _decoders(sig: str) -> tuple[msgspec.msgpack.Decoder, msgspec.msgpack.Decoder]:
    element, end = _parse(sig)
    if end != len(sig):
        raise ValueError(f"buffer type signature {sig!r} has trailing characters")
    return (
        msgspec.msgpack.Decoder(list[element]),
        msgspec.msgpack.Decoder(tuple[list[element], list[int]]),
    )


class BufferEncoder:
    """The encoder of one edge: typed when its declared type allows, else pickle. A buffer
    MessagePack cannot hold as declared (an int beyond 64 bits) goes as pickle."""

    def __init__(self, type_info: TypeInformation | None) -> None:
        sig = signature(type_info)
        self.typed = sig is not None
        if sig is not None:
            self._header = bytes((len(sig),)) + sig.encode()
            self._encoder = msgspec.msgpack.Encoder()
            _decoders(sig)  # a signature this side cannot read is refused here

    def encode(self, records: list[Any], timestamps: list[int] | None = None) -> bytes:
        if self.typed:
            try:
                if timestamps is None:
                    return bytes((TYPED,)) + self._header + self._encoder.encode(records)
                body = self._encoder.encode((records, timestamps))
                return bytes((TYPED_TIMED,)) + self._header + body
            except (msgspec.EncodeError, TypeError, OverflowError):
                pass
        return pickle.dumps(records if timestamps is None else (records, timestamps), protocol=5)


def decode_buffer(payload: bytes) -> list[Any] | tuple[list[Any], list[int]]:
    """A buffer's records, or (records, timestamps): however it was written."""
    marker = payload[0]
    if marker != TYPED and marker != TYPED_TIMED:
        return pickle.loads(payload)
    length = payload[1]
    if length > _MAX_SIGNATURE:
        raise ValueError(f"buffer type signature of {length} bytes: too long")
    sig = bytes(payload[2 : 2 + length]).decode()
    untimed, timed = _decoders(sig)
    body = payload[2 + length :]
    if marker == TYPED:
        return untimed.decode(body)
    records, timestamps = timed.decode(body)
    return records, timestamps
