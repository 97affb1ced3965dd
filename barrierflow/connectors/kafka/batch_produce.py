"""KafkaSink's per-record path: a batch of records serialized, partitioned where the schema has
a partitioner, then handed to the producer, in loops that do nothing else per record (a Python
call of our own per record cost about as much as the client's ``produce``; docs/benchmarks.md,
Kafka to Kafka).

**Threading:** the task thread. **I/O:** the producer's local queue (librdkafka's threads
send); a topic's metadata, once (``PartitionIds``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from barrierflow.connectors.base.batch_map import BatchItemError, map_batch
from barrierflow.connectors.kafka.key_group_partitioner import KafkaPartitioner
from barrierflow.connectors.kafka.transactions import FLUSH_TIMEOUT_S, produce

KeyValue = tuple[bytes | None, bytes]


def serialized_all(serialize: Callable[[Any], KeyValue], records: list[Any]) -> list[KeyValue]:
    """The (key, value) of each record; a ``ValueError`` naming the record that fails."""
    try:
        return map_batch(serialize, records)
    except BatchItemError as e:
        culprit = records[0 if e.index is None else e.index]
        raise ValueError(
            f"KafkaSink cannot serialize record {culprit!r:.200}: {e.error}"
        ) from e.error


def produce_all(
    producer: Any, topics: Iterable[str], pairs: list[KeyValue], partitions: list[int] | None = None
) -> None:
    """Each (key, value) to its topic, and to its partition where ``partitions`` says (a
    partitioner's; None: the client's). A full local queue is waited out record by record, as
    ``transactions.produce`` does, and the batch goes on."""
    send = producer.produce
    if partitions is not None:
        for topic, (key, value), p in zip(topics, pairs, partitions, strict=False):
            try:
                send(topic, value, key, partition=p)
            except BufferError:
                produce(producer, topic, key, value, p)
        return
    for topic, (key, value) in zip(topics, pairs, strict=False):  # topics may be endless
        try:
            send(topic, value, key)
        except BufferError:
            produce(producer, topic, key, value)


def partitioned_all(
    partitioner: KafkaPartitioner,
    records: list[Any],
    topics: Iterable[str],
    pairs: list[KeyValue],
    partition_ids: Callable[[str], list[int]],
) -> list[int]:
    """The partition ``partitioner`` gives each record; a ``ValueError`` naming the record it
    fails on. ``partition_ids``: a topic's partition ids, in order."""
    partition = partitioner.partition
    out = []
    record = None
    try:
        for record, topic, (key, value) in zip(records, topics, pairs, strict=False):
            out.append(partition(record, key, value, topic, partition_ids(topic)))
    except Exception as e:
        raise ValueError(
            f"KafkaSink's partitioner {type(partitioner).__name__} failed on record "
            f"{record!r:.200}: {e}"
        ) from e
    return out


class PartitionIds:
    """The partition ids of each topic a writer writes to, asked of the brokers once (a
    partitioner's arithmetic holds for a fixed partition count)."""

    def __init__(self, producer: Any) -> None:
        self._producer = producer
        self._known: dict[str, list[int]] = {}

    def __call__(self, topic: str) -> list[int]:
        ids = self._known.get(topic)
        if ids is None:
            found = self._producer.list_topics(topic, timeout=FLUSH_TIMEOUT_S).topics.get(topic)
            if found is None or found.error is not None or not found.partitions:
                error = found.error if found is not None else "unknown"
                raise ValueError(f"KafkaSink: topic {topic} has no partitions to write to: {error}")
            ids = self._known[topic] = sorted(found.partitions)
        return ids
