"""KafkaSink's per-record path: a batch of records serialized, then handed to the producer, in
loops that do nothing else per record (a Python call of our own per record cost about as much
as the client's ``produce``; docs/benchmarks.md, Kafka to Kafka).

**Threading:** the task thread. **I/O:** the producer's local queue (librdkafka's threads send).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from barrierflow.connectors.kafka.transactions import produce

KeyValue = tuple[bytes | None, bytes]


def serialized_all(serialize: Callable[[Any], KeyValue], records: list[Any]) -> list[KeyValue]:
    """The (key, value) of each record; a ``ValueError`` naming the record that fails."""
    try:
        return list(map(serialize, records))
    except Exception as e:  # noqa: BLE001 - raised below, with the record that fails
        failed, culprit = e, records[0]
    for record in records:  # one at a time, to name the record that fails
        try:
            serialize(record)
        except Exception as e:  # noqa: BLE001 - raised below, with its record
            failed, culprit = e, record
            break
    raise ValueError(f"KafkaSink cannot serialize record {culprit!r:.200}: {failed}") from failed


def produce_all(producer: Any, topics: Iterable[str], pairs: list[KeyValue]) -> None:
    """Each (key, value) to its topic. A full local queue is waited out record by record, as
    ``transactions.produce`` does, and the batch goes on."""
    send = producer.produce
    for topic, (key, value) in zip(topics, pairs, strict=False):  # topics may be endless
        try:
            send(topic, value, key)
        except BufferError:
            produce(producer, topic, key, value)
