"""Declared types that MessagePack holds as declared, named by a short signature, and the msgspec
types that decode MessagePack back to them: the serializer a declared type picks for buffers on
the network (``protocol/buffer_codec.py``) and for state values in RocksDB
(``state/value_codec.py``).

A signature is text: ``i`` int, ``s`` str, ``f`` float, ``b`` bool, ``t(x,y)`` a tuple of an x
and a y, ``l(x)`` a list of x; every value may be None (``t(s,i)``: a tuple of a string and an
int). Written beside the bytes, it lets any reader decode them without knowing who wrote them.
It is parsed into msgspec types only: no code is looked up or run from it. Performs no I/O.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import msgspec

from barrierflow.common.typeinfo import TypeInformation

_SCALARS = {
    "BYTE": "i", "SHORT": "i", "INT": "i", "LONG": "i", "BIG_INT": "i",
    "STRING": "s", "CHAR": "s", "FLOAT": "f", "DOUBLE": "f", "BOOLEAN": "b",
}  # fmt: skip
_LISTS = ("LIST", "BASIC_ARRAY", "PRIMITIVE_ARRAY", "OBJECT_ARRAY")
_PYTHON = {"i": int, "s": str, "f": float, "b": bool}
MAX_SIGNATURE = 200  # bytes: a longer one is refused as corrupt
# What MessagePack cannot hold as declared (an int beyond 64 bits, a str with a lone
# surrogate): such a buffer or value is pickled instead.
ENCODE_ERRORS = (msgspec.EncodeError, TypeError, OverflowError, UnicodeEncodeError)


def signature(type_info: TypeInformation | None) -> str | None:
    """The signature of ``type_info``, or None when MessagePack cannot hold it as declared."""
    if type_info is None:
        return None
    if type_info.name in _SCALARS:
        return _SCALARS[type_info.name]
    if type_info.name == "TUPLE" or type_info.name in _LISTS:
        inner = [signature(t) for t in type_info.fields]
        held = [s for s in inner if s is not None]
        if len(held) < len(inner):
            return None
        sig = ("t(" if type_info.name == "TUPLE" else "l(") + ",".join(held) + ")"
        return sig if len(sig) <= MAX_SIGNATURE else None
    return None


def _parse(text: str, at: int = 0) -> tuple[Any, int]:
    """The msgspec type of the signature at ``text[at:]`` and where it ends."""
    kind = text[at : at + 1]
    if kind in _PYTHON:
        return Optional[_PYTHON[kind]], at + 1  # noqa: UP045 - a runtime type object
    if kind not in ("t", "l") or text[at + 1 : at + 2] != "(":
        raise ValueError(f"type signature {text!r} is malformed at {at}")
    items, at = [], at + 2
    while True:
        item, at = _parse(text, at)
        items.append(item)
        if text[at : at + 1] == ")":
            break
        if text[at : at + 1] != ",":
            raise ValueError(f"type signature {text!r} is malformed at {at}")
        at += 1
    if kind == "l":
        if len(items) != 1:
            raise ValueError(f"type signature {text!r}: a list has one element type")
        # types made at run time, from the signature: they have no static type
        return Optional[list[items[0]]], at + 1  # type: ignore[valid-type]  # noqa: UP045
    return Optional[tuple[tuple(items)]], at + 1  # type: ignore[misc]  # noqa: UP045


@functools.cache
def msgspec_type(sig: str) -> Any:
    """The msgspec type that decodes values of signature ``sig``; ValueError if malformed."""
    element, end = _parse(sig)
    if end != len(sig):
        raise ValueError(f"type signature {sig!r} has trailing characters")
    return element


def header(marker: int, sig: str) -> bytes:
    """``marker``, the signature's length (one byte) and the signature: what precedes the
    MessagePack body of a typed buffer or value."""
    return bytes((marker, len(sig))) + sig.encode()


def read_header(payload: bytes) -> tuple[str, int]:
    """The signature of a typed payload (after its marker byte) and where its body starts."""
    length = payload[1]
    if length > MAX_SIGNATURE:
        raise ValueError(f"type signature of {length} bytes: too long")
    return bytes(payload[2 : 2 + length]).decode(), 2 + length
