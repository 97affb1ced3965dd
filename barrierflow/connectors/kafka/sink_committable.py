"""What KafkaSink's writers prepare at a barrier (EXACTLY_ONCE): a transaction, with its records
so that one a failure left uncommitted is sent again (``transactions.py``); and its versioned
codec. Performs no I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class KafkaCommittable(msgspec.Struct, frozen=True):
    """Transaction ``sequence`` of ``transactional_id`` (the subtask's ``slot``), into
    ``topic``, with its ``records`` as (key, value) bytes, and the partition of each where the
    sink's partitioner chose it (None: the client did; absent from what was written before)."""

    transactional_id: str
    slot: int
    sequence: int
    topic: str
    records: list[tuple[bytes | None, bytes]]
    partitions: list[int] | None = None


KAFKA_COMMITTABLES = StructCodec(KafkaCommittable)
