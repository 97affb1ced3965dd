"""Which subtask reads a Kafka partition: a function of topic, partition and parallelism only,
so that every subtask, at any time and after any rescale, agrees without talking to the others
(Flink's KafkaSourceEnumerator rule: a topic's partitions go round the subtasks from a start
that depends on the topic). And its inverse for key groups: the partition a producer writes a
key group to so that the subtask reading it is the one that owns the key group, which a
stream reinterpreted as keyed needs (``key_group_partitioner.py``). Performs no I/O."""

from __future__ import annotations

import zlib

from barrierflow.protocol.key_group_range import subtask_for_key_group


def owner(topic: str, partition: int, parallelism: int) -> int:
    start = zlib.crc32(topic.encode()) % parallelism
    return (start + partition) % parallelism


def partition_for_key_group(
    topic: str, key_group: int, partitions: int, parallelism: int, max_parallelism: int
) -> int:
    """The partition (of ``partitions``, a multiple of ``parallelism``) that the owner of
    ``key_group`` reads at ``parallelism``: each subtask reads ``partitions / parallelism`` of
    them, its key groups spread over them. A ``ValueError`` for another partition count."""
    if partitions < parallelism or partitions % parallelism:
        raise ValueError(
            f"topic {topic!r} has {partitions} partitions: read at parallelism {parallelism} "
            f"by key group, it needs a multiple of {parallelism}, each subtask reading the "
            "same number of them"
        )
    subtask = subtask_for_key_group(max_parallelism, parallelism, key_group)
    first = (subtask - zlib.crc32(topic.encode())) % parallelism  # owner(topic, first) == subtask
    return first + parallelism * (key_group % (partitions // parallelism))
