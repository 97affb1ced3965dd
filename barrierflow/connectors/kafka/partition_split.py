"""A Kafka partition as a split, the enumerator's state, and their versioned codecs. Performs no
I/O."""

from __future__ import annotations

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec


class KafkaPartitionSplit(msgspec.Struct, frozen=True):
    """Partition ``partition`` of ``topic``, read from ``offset`` (its next message); bounded,
    up to ``stop`` (exclusive; None: unbounded)."""

    topic: str
    partition: int
    offset: int
    stop: int | None = None

    @property
    def split_id(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def topic_partition(self) -> tuple[str, int]:
        return self.topic, self.partition


class KafkaEnumeratorState(msgspec.Struct, frozen=True):
    """The partitions handed out, those found but not handed out yet (their owner's reader was
    not running), and whether the first discovery is done (where reading starts)."""

    assigned: list[tuple[str, int]]
    pending: list[KafkaPartitionSplit]
    discovered: bool


KAFKA_PARTITION_SPLITS = StructCodec(KafkaPartitionSplit)
KAFKA_ENUMERATOR_STATES = StructCodec(KafkaEnumeratorState)
