"""The versioned codec of a kind of value that is a msgspec ``Struct`` (a file split, a Kafka
transaction, an enumerator's state): MessagePack of its fields by name. Performs no I/O.

Version 2 is a kind's first typed layout, the one every kind writes today; ``DICT_LAYOUT`` (1),
the plain dict kept before, is read by ``from_dict_layout``: by default the dict's entries as the
struct's fields, and where a kind's dicts lacked a field that its struct requires, the kind's
codec fills it in there, in its one version switch (``versioned_codec.py``).
"""

from __future__ import annotations

import typing
from typing import Any, TypeVar

import msgspec

from barrierflow.connectors.interfaces.versioned_codec import DICT_LAYOUT, VersionedCodec

T = TypeVar("T")

FIRST_TYPED = 2  # the version of a kind's first typed layout

_plain_decoder = msgspec.msgpack.Decoder()


class StructCodec(VersionedCodec[T]):
    """``kind``: the struct (a generic one with its parameters, e.g. ``State[FileSplit]``)."""

    def __init__(self, kind: type[T], version: int = FIRST_TYPED) -> None:
        self._kind = kind
        self._class: type = typing.get_origin(kind) or kind
        self._version = version
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(kind)

    @property
    def version(self) -> int:
        return self._version

    def serialize(self, value: T) -> bytes:
        if not isinstance(value, self._class):
            raise TypeError(
                f"expected a {self._class.__name__}, got {type(value).__name__} "
                f"{value!r:.200}; connectors written before typed splits and committables "
                f"returned dicts: return {self._class.__name__}(...) instead"
            )
        return self._encoder.encode(value)

    def deserialize(self, version: int, data: bytes) -> T:
        if version == self._version:
            return self._decoder.decode(data)
        if version == DICT_LAYOUT:
            return self.from_dict_layout(_plain_decoder.decode(data))
        raise self.unknown(version)

    def from_dict_layout(self, fields: dict[str, Any]) -> T:
        """The value of a plain dict an earlier barrierflow kept: its entries as the struct's
        fields (entries the struct does not have are dropped)."""
        return msgspec.convert(fields, self._kind)
