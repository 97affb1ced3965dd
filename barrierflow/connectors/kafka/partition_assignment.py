"""Which subtask reads a Kafka partition: a function of topic, partition and parallelism only,
so that every subtask, at any time and after any rescale, agrees without talking to the others
(Flink's KafkaSourceEnumerator rule: a topic's partitions go round the subtasks from a start
that depends on the topic). Performs no I/O."""

from __future__ import annotations

import zlib


def owner(topic: str, partition: int, parallelism: int) -> int:
    start = zlib.crc32(topic.encode()) % parallelism
    return (start + partition) % parallelism
