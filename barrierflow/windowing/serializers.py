"""How windows are written as bytes, as PyFlink's window serializers write them (big-endian
64-bit integers: a time window's start and end, a count window's id; a global window as one
zero byte), so that bytes written by either read on the other. barrierflow's window operator
keeps windows in keyed state by its own state serialization; these serve programs that name
an assigner's serializer (``get_window_serializer()``) or write windows themselves.

Performs no I/O beyond the stream it is given.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any, Generic, TypeVar

from barrierflow.windowing.windows import CountWindow, GlobalWindow, TimeWindow

T = TypeVar("T")

_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")


class TypeSerializer(Generic[T]):
    """Writes values of one type to a byte stream and reads them back (PyFlink's
    ``pyflink.common.serializer.TypeSerializer``)."""

    def serialize(self, element: T, stream: BytesIO) -> None:
        raise NotImplementedError

    def deserialize(self, stream: BytesIO) -> T:
        raise NotImplementedError

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, self.__class__) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(self.__class__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _read(stream: BytesIO, n: int, what: str) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError(f"{what}: {n} bytes expected, the stream had {len(data)}")
    return data


class TimeWindowSerializer(TypeSerializer[TimeWindow]):
    def serialize(self, element: TimeWindow, stream: BytesIO) -> None:
        stream.write(_TWO_LONGS.pack(element.start, element.end))

    def deserialize(self, stream: BytesIO) -> TimeWindow:
        return TimeWindow(*_TWO_LONGS.unpack(_read(stream, 16, "a TimeWindow")))


class CountWindowSerializer(TypeSerializer[CountWindow]):
    def serialize(self, element: CountWindow, stream: BytesIO) -> None:
        stream.write(_LONG.pack(element.id))

    def deserialize(self, stream: BytesIO) -> CountWindow:
        return CountWindow(_LONG.unpack(_read(stream, 8, "a CountWindow"))[0])


class GlobalWindowSerializer(TypeSerializer[GlobalWindow]):
    def serialize(self, element: GlobalWindow, stream: BytesIO) -> None:
        stream.write(b"\x00")

    def deserialize(self, stream: BytesIO) -> GlobalWindow:
        _read(stream, 1, "a GlobalWindow")
        return GlobalWindow()
