"""Where a Kafka source starts and stops reading each partition (PyFlink's names), and their
resolution to offsets through a consumer.

**I/O:** ``resolve`` asks the brokers (watermarks, committed offsets, offsets for times).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from barrierflow.errors import ConfigurationError

_TIMEOUT_S = 10.0


@dataclass(frozen=True, order=True)
class KafkaTopicPartition:
    topic: str
    partition: int


class KafkaOffsetResetStrategy(enum.Enum):
    """Where to start a partition that has no committed offset."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"  # fail


class KafkaOffsetsInitializer:
    """``earliest()``, ``latest()``, ``committed_offsets()``, ``timestamp(ms)``,
    ``offsets({...})``."""

    def __init__(
        self,
        kind: str,
        argument: Any = None,
        reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> None:
        self.kind = kind
        self.argument = argument
        self.reset = reset

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def committed_offsets(
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
    ) -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("committed", reset=offset_reset_strategy)

    @staticmethod
    def timestamp(timestamp_ms: int) -> KafkaOffsetsInitializer:
        if not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise ConfigurationError(
                f"KafkaOffsetsInitializer.timestamp needs milliseconds >= 0, got {timestamp_ms!r}"
            )
        return KafkaOffsetsInitializer("timestamp", timestamp_ms)

    @staticmethod
    def offsets(
        offsets: Mapping[Any, int],
        offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST,
    ) -> KafkaOffsetsInitializer:
        """``offsets``: {KafkaTopicPartition(topic, p) or (topic, p): offset}; partitions not
        named start as ``offset_reset_strategy`` says."""
        specific = {}
        for tp, offset in offsets.items():
            topic, partition = (
                (tp.topic, tp.partition) if isinstance(tp, KafkaTopicPartition) else tp
            )
            if not isinstance(offset, int) or offset < 0:
                raise ConfigurationError(
                    f"KafkaOffsetsInitializer.offsets: offset {offset!r} of {topic}-{partition} "
                    "must be an integer >= 0"
                )
            specific[(topic, int(partition))] = offset
        return KafkaOffsetsInitializer("specific", specific, offset_reset_strategy)

    def __repr__(self) -> str:
        argument = "" if self.argument is None else repr(self.argument)
        return f"KafkaOffsetsInitializer.{self.kind}({argument})"


def resolve(
    initializer: KafkaOffsetsInitializer, consumer: Any, partitions: list[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """The offset of each partition, asked of the brokers now."""
    from confluent_kafka import TopicPartition

    def watermark(tp: tuple[str, int], high: bool) -> int:
        low_high = consumer.get_watermark_offsets(TopicPartition(*tp), timeout=_TIMEOUT_S)
        return low_high[1] if high else low_high[0]

    def reset(tp: tuple[str, int], strategy: KafkaOffsetResetStrategy, why: str) -> int:
        if strategy is KafkaOffsetResetStrategy.NONE:
            raise ConfigurationError(
                f"KafkaSource: partition {tp[0]}-{tp[1]} has {why}; choose "
                "committed_offsets(KafkaOffsetResetStrategy.EARLIEST) (or LATEST) to start anyway"
            )
        return watermark(tp, strategy is KafkaOffsetResetStrategy.LATEST)

    kind = initializer.kind
    if kind in ("earliest", "latest"):
        return {tp: watermark(tp, kind == "latest") for tp in partitions}
    if kind == "committed":
        committed = consumer.committed([TopicPartition(*tp) for tp in partitions], _TIMEOUT_S)
        out = {}
        for c in committed:
            tp = (c.topic, c.partition)
            out[tp] = (
                c.offset if c.offset >= 0 else reset(tp, initializer.reset, "no committed offset")
            )
        return out
    if kind == "timestamp":
        found = consumer.offsets_for_times(
            [TopicPartition(t, p, initializer.argument) for t, p in partitions], _TIMEOUT_S
        )
        return {
            (f.topic, f.partition): f.offset
            if f.offset >= 0
            else watermark((f.topic, f.partition), True)
            for f in found
        }
    if kind == "specific":
        return {
            tp: initializer.argument[tp]
            if tp in initializer.argument
            else reset(tp, initializer.reset, "no offset given")
            for tp in partitions
        }
    raise AssertionError(kind)
