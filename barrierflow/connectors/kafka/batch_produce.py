"""KafkaSink's per-record path: a batch of records serialized, then handed to the producer, in
loops that do nothing else per record (a Python call of our own per record cost about as much
as the client's ``produce``; docs/benchmarks.md, Kafka to Kafka).

**Threading:** the task thread. **I/O:** the producer's local queue (librdkafka's threads send).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from barrierflow.connectors.base.batch_map import BatchItemError, map_batch
from barrierflow.connectors.kafka.transactions import produce

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


def produce_all(producer: Any, topics: Iterable[str], pairs: list[KeyValue]) -> None:
    """Each (key, value) to its topic. A full local queue is waited out record by record, as
    ``transactions.produce`` does, and the batch goes on."""
    send = producer.produce
    for topic, (key, value) in zip(topics, pairs, strict=False):  # topics may be endless
        try:
            send(topic, value, key)
        except BufferError:
            produce(producer, topic, key, value)
