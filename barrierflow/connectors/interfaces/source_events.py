"""The operator events between a source's readers and its split enumerator, as MessagePack.
Performs no I/O."""

from __future__ import annotations

from typing import Any

import msgspec


class AddSplits(msgspec.Struct, frozen=True, tag="add-splits"):
    """Enumerator -> reader: read these splits too, each as its source's ``split_codec`` stores
    it (``[version, bytes]``)."""

    splits: list[Any]


class NoMoreSplits(msgspec.Struct, frozen=True, tag="no-more-splits"):
    """Enumerator -> reader: nothing more will be assigned."""


class SplitRequest(msgspec.Struct, frozen=True, tag="split-request"):
    """Reader -> enumerator: give me a split."""


ToReader = AddSplits | NoMoreSplits

_encoder = msgspec.msgpack.Encoder()
_to_reader: msgspec.msgpack.Decoder[ToReader] = msgspec.msgpack.Decoder(ToReader)
_to_enumerator = msgspec.msgpack.Decoder(SplitRequest)


def encode(event: AddSplits | NoMoreSplits | SplitRequest) -> bytes:
    return _encoder.encode(event)


def decode_to_reader(payload: bytes) -> ToReader:
    return _to_reader.decode(payload)


def decode_to_enumerator(payload: bytes) -> SplitRequest:
    return _to_enumerator.decode(payload)
