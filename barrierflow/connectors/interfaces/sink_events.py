"""The operator events from a sink's subtasks to its global committer, and the committer's
state, as MessagePack; committables in them as their sink's ``committable_codec`` stores them
(``[version, bytes]``). Performs no I/O."""

from __future__ import annotations

from typing import Any

import msgspec


class Prepared(msgspec.Struct, frozen=True, tag="prepared"):
    """At the barrier of ``checkpoint_id``: what the subtask's writer prepared."""

    checkpoint_id: int
    committables: list[Any]


class Restored(msgspec.Struct, frozen=True, tag="restored"):
    """On open: the committables of the restored checkpoint this subtask answers for
    (``committables.to_state`` entries; none after a fresh start)."""

    entries: list[dict[str, Any]]


class Finished(msgspec.Struct, frozen=True, tag="finished"):
    """The input ended without checkpointing: commit this with everything else."""

    committables: list[Any]


SinkEvent = Prepared | Restored | Finished

_encoder = msgspec.msgpack.Encoder()
_events: msgspec.msgpack.Decoder[SinkEvent] = msgspec.msgpack.Decoder(SinkEvent)
_state = msgspec.msgpack.Decoder(list[dict[str, Any]])


def encode(value: SinkEvent | list[dict[str, Any]]) -> bytes:
    """An event, or the global committer's state (``committables.to_state`` entries)."""
    return _encoder.encode(value)


def decode_event(payload: bytes) -> SinkEvent:
    return _events.decode(payload)


def decode_state(data: bytes) -> list[dict[str, Any]]:
    return _state.decode(data)
