"""Which partition KafkaSink writes a record to: Flink's ``FlinkKafkaPartitioner`` (PyFlink has
none; ``KafkaRecordSerializationSchemaBuilder.set_partitioner``), and ``KeyGroupPartitioner``,
which writes a topic that a job can read as a keyed stream (``DataStreamUtils.
reinterpret_as_keyed_stream``): each record to a partition that the KafkaSource subtask owning
its key's key group reads, at the reading job's parallelism. Performs no I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from barrierflow.connectors.kafka.partition_assignment import partition_for_key_group
from barrierflow.protocol.key_group_range import DEFAULT_MAX_PARALLELISM
from barrierflow.state.key_groups import KeyGroupCache, hashable_keys


class KafkaPartitioner(ABC):
    """Chooses the partition of each record KafkaSink writes (Flink's
    ``FlinkKafkaPartitioner``); without one, the Kafka client's partitioner does, by the
    record's Kafka key."""

    def open(self, parallel_instance_id: int, parallel_instances: int) -> None:  # noqa: B027
        """Called once per sink subtask, before its first record."""

    @abstractmethod
    def partition(
        self, record: Any, key: bytes | None, value: bytes, target_topic: str, partitions: list[int]
    ) -> int:
        """The partition of ``record`` (serialized as ``key`` and ``value``): one of
        ``partitions``, the topic's partition ids in order."""


class KeyGroupPartitioner(KafkaPartitioner):
    """Each record to the partition read by the KafkaSource subtask that owns its key's key
    group, for a job reading the topic at ``parallelism`` with ``max_parallelism`` (the job's
    ``set_max_parallelism``, 128 by default) and keying it by ``key_selector`` (the key
    ``reinterpret_as_keyed_stream`` is given, on the records as that job reads them).

    The topic's partition count must be a multiple of ``parallelism``. The partitioning is for
    that parallelism: a reading job rescaled to another needs the topic written again for it
    (the reading job's check fails on the first record of a key group not its subtask's)."""

    def __init__(
        self,
        key_selector: Callable[[Any], Any] | Any,
        parallelism: int,
        max_parallelism: int = DEFAULT_MAX_PARALLELISM,
    ) -> None:
        select = getattr(key_selector, "get_key", key_selector)  # a KeySelector
        if not callable(select):
            raise TypeError(f"KeyGroupPartitioner needs a key selector, got {key_selector!r}")
        for what, n in (("parallelism", parallelism), ("max_parallelism", max_parallelism)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"KeyGroupPartitioner: {what} must be a positive int, got {n!r}")
        if parallelism > max_parallelism:
            raise ValueError(
                f"KeyGroupPartitioner: parallelism {parallelism} is above max_parallelism "
                f"{max_parallelism}"
            )
        self._select = hashable_keys(select)  # a list key as key_by has it
        self.parallelism = parallelism
        self.max_parallelism = max_parallelism
        self._key_groups: KeyGroupCache | None = None  # made where it runs: not pickled full

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_key_groups": None}

    def partition(
        self, record: Any, key: bytes | None, value: bytes, target_topic: str, partitions: list[int]
    ) -> int:
        return partitions[
            self.partition_of_key(self._select(record), target_topic, len(partitions))
        ]

    def partition_of_key(self, key: Any, topic: str, partitions: int) -> int:
        """The partition of ``key`` in ``topic`` of ``partitions`` partitions (numbered from
        0): for a producer of another program, which passes it to its client's ``produce``."""
        if self._key_groups is None:
            self._key_groups = KeyGroupCache(self.max_parallelism)
        key_group = self._key_groups.key_group(key)
        return partition_for_key_group(
            topic, key_group, partitions, self.parallelism, self.max_parallelism
        )
