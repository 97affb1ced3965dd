"""Versioned codecs (Flink's ``SimpleVersionedSerializer``) of what the connector framework keeps
in checkpoints and sends between the JobMaster and the tasks: splits, split enumerators' states
and committables. Performs no I/O.

Each kind has one codec: ``serialize`` writes its current layout, tagged with its ``version``;
``deserialize(version, data)`` reads every layout the kind was ever written in, so that the
branches for what earlier barrierflows wrote live in one place per kind, its version switch.
A value is stored as ``[version, bytes]`` (MessagePack), never pickled.

The versions every kind shares: ``DICT_LAYOUT`` (1), the plain dicts barrierflow kept before
splits and committables had codecs (a dict found where ``[version, bytes]`` is expected is read
as its MessagePack under this version, so that every earlier checkpoint restores); a kind's typed
layouts from 2 on; and for split enumerators' states ``BEFORE_ENUMERATORS`` (0), no bytes at all:
a checkpoint taken before sources had split enumerators (docs/formats.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

import msgspec

T = TypeVar("T")

BEFORE_ENUMERATORS = 0  # an enumerator state of a checkpoint taken before enumerators: none
DICT_LAYOUT = 1  # a split, enumerator state or committable as the plain dict kept before codecs

# a value as it is stored: [version, bytes], or a dict of the DICT_LAYOUT
Stored = Any

_plain_encoder = msgspec.msgpack.Encoder()
_plain_decoder = msgspec.msgpack.Decoder()


class UnknownVersion(ValueError):
    """A codec was given bytes of a version it does not read (written by a newer barrierflow,
    or an enumerator state asked for of a checkpoint taken before enumerators)."""


class VersionedCodec(ABC, Generic[T]):
    """The bytes of one kind of value. Obligations: ``deserialize(version, serialize(v))``
    equals ``v``; ``deserialize`` reads every version the kind was written in and raises
    ``UnknownVersion`` for any other; neither does I/O or keeps state (a codec is shared by
    the driver and every subtask)."""

    @property
    @abstractmethod
    def version(self) -> int:
        """The version ``serialize`` writes."""

    @abstractmethod
    def serialize(self, value: T) -> bytes:
        """Raises ``TypeError`` for a value that is not of the codec's kind."""

    @abstractmethod
    def deserialize(self, version: int, data: bytes) -> T: ...

    def unknown(self, version: int) -> UnknownVersion:
        return UnknownVersion(
            f"{type(self).__name__} reads versions up to {self.version}, not {version}: the "
            "snapshot was written by a newer barrierflow, or is not this connector's"
        )


class PlainValuesCodec(VersionedCodec[Any]):
    """The codec of a connector that declares none: its splits, enumerator states and
    committables are plain values (dicts of numbers, strings, bytes, lists), as connectors
    wrote them before codecs, kept as their MessagePack in the ``DICT_LAYOUT``."""

    @property
    def version(self) -> int:
        return DICT_LAYOUT

    def serialize(self, value: Any) -> bytes:
        if isinstance(value, msgspec.Struct):  # would come back a dict: its reader's undoing
            raise TypeError(
                f"{value!r:.200} is a {type(value).__name__}, not plain values, and would be "
                "restored as a dict. Give the connector the codec of its type (its split_codec, "
                "enumerator_state_codec or committable_codec; a connector that wraps another "
                "returns the wrapped one's)"
            )
        try:
            return _plain_encoder.encode(value)
        except TypeError as e:
            raise TypeError(
                f"{value!r:.200} is not plain values (numbers, strings, bytes, lists, dicts): "
                f"{e}. Give the connector a codec of its type (split_codec, "
                "enumerator_state_codec, committable_codec)"
            ) from None

    def deserialize(self, version: int, data: bytes) -> Any:
        if version != DICT_LAYOUT:
            raise self.unknown(version)
        return _plain_decoder.decode(data)


PLAIN_VALUES = PlainValuesCodec()


def encode_stored(codec: VersionedCodec[T], value: T) -> list[Any]:
    """``value`` as it is stored in operator state and events: ``[version, bytes]``."""
    return [codec.version, codec.serialize(value)]


def decode_stored(codec: VersionedCodec[T], stored: Stored) -> T:
    """A value ``encode_stored`` wrote, or a plain dict an earlier barrierflow stored."""
    if isinstance(stored, dict):
        return codec.deserialize(DICT_LAYOUT, _plain_encoder.encode(stored))
    version, data = stored
    return codec.deserialize(version, data)


def encode_state(codec: VersionedCodec[T], value: T) -> bytes:
    """``value`` as bytes on its own (an operator coordinator's state): ``[version, bytes]``
    as MessagePack."""
    return _plain_encoder.encode(encode_stored(codec, value))


def decode_state(codec: VersionedCodec[T], data: bytes) -> T:
    """Bytes ``encode_state`` wrote, or a plain dict's MessagePack an earlier barrierflow wrote
    (read as itself, in the ``DICT_LAYOUT``)."""
    stored = _plain_decoder.decode(data)
    if isinstance(stored, dict):
        return codec.deserialize(DICT_LAYOUT, data)
    return decode_stored(codec, stored)
