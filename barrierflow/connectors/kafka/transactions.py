"""Kafka transactions as KafkaSink uses them (docs/adr/0008-kafka-exactly-once.md).

librdkafka cannot resume a transaction another producer opened, and ``init_transactions``
aborts an open transaction of its id. So each transaction commits, with its records, a sequence
number as the offset of a consumer group of its own id (the *commit group*): whether a
checkpointed transaction committed is read there, and one that did not is sent again, with the
same number, from the records its committable carries.

Transactional ids are ``<prefix>-<subtask>-<slot>``, a few slots per subtask, reused, so that a
new attempt's ``init_transactions`` fences every producer of the attempts before it and aborts
what they left open.

**Threading:** the task thread. **I/O:** producers and commit-group consumers.
"""

from __future__ import annotations

import contextlib
import logging
import time
from itertools import repeat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from barrierflow.connectors.kafka.sink import KafkaSink
    from barrierflow.connectors.kafka.sink_committable import KafkaCommittable

log = logging.getLogger("barrierflow.connectors.kafka")

TRANSACTION_SLOTS = 4  # transactions a subtask may have open or awaiting their checkpoint
FLUSH_TIMEOUT_S = 60.0
PARTITION_ANY = -1  # librdkafka's RD_KAFKA_PARTITION_UA: its partitioner chooses


def commit_group(kafka: Any, sink: KafkaSink, transactional_id: str) -> Any:
    """A consumer of the id's commit group: never subscribed, it reads the group's committed
    offset and lends its metadata to ``send_offsets_to_transaction``."""
    return kafka.Consumer(
        {
            "bootstrap.servers": sink.bootstrap_servers,
            "group.id": f"{transactional_id}.commits",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            **_client_security(sink.properties),
        }
    )


def last_committed(kafka: Any, consumer: Any, topic: str) -> int:
    """The sequence number of the id's last committed transaction; -1: none. (The offset is
    kept under partition 0 of the sink's topic: any partition would do.)"""
    (tp,) = consumer.committed([kafka.TopicPartition(topic, 0)], FLUSH_TIMEOUT_S)
    return tp.offset if tp.offset >= 0 else -1


def send_sequence(
    kafka: Any, producer: Any, consumer: Any, topic: str, sequence: int, checkpoint_id: int
) -> None:
    """Makes the open transaction commit ``sequence`` as its commit group's offset."""
    producer.send_offsets_to_transaction(
        [kafka.TopicPartition(topic, 0, sequence, metadata=f"checkpoint {checkpoint_id}")],
        consumer.consumer_group_metadata(),
        FLUSH_TIMEOUT_S,
    )


def check_committed(
    kafka: Any, consumer: Any, topic: str, transactional_id: str, sequence: int, checkpoint_id: int
) -> None:
    """Raises unless the commit the brokers just acknowledged took: its id's commit group holds
    its sequence number.

    Kafka makes a transaction's records and its group offset visible together, so the offset
    is the proof of the records. An acknowledgement is not: the test broker (``noida-db``)
    forgets its open transactions when it restarts, then acknowledges their commit and commits
    nothing (docs/reliability.md, seed 20261125000). Counted done, such a transaction would be
    lost, and a later one of the same id would carry the offset past its number, so that no
    restore could tell. A read too early for Kafka (before the commit's markers reached the
    group) costs only the retry: ``ensure_committed``'s ``init_transactions`` waits for the
    commit to complete, then finds it, and sends nothing again."""
    found = last_committed(kafka, consumer, topic)
    if found < sequence:
        raise RuntimeError(
            f"KafkaSink: the brokers acknowledged the commit of transaction {transactional_id} "
            f"(checkpoint {checkpoint_id}, sequence {sequence}), but its commit group "
            f"{transactional_id}.commits holds {found}: the transaction was lost, its records "
            "are not in the topic (a broker that restarted and forgot it?). They are sent "
            "again from the checkpoint"
        )


def ensure_committed(kafka: Any, sink: KafkaSink, c: KafkaCommittable, checkpoint_id: int) -> None:
    """Idempotent: the records of committable ``c`` end up committed exactly once in the topic.

    The id's commit group tells whether it committed: a transaction commits its sequence number
    as the group's offset, and an id's next transaction starts only once this one is settled
    (its commit checked: ``check_committed``), so an offset at or past its number means
    committed. Otherwise, after ``init_transactions`` of its id (which aborts it if it is still
    open, and fences the producer that opened it), its records are sent again, with the same
    number, in a new transaction."""
    tid = c.transactional_id
    consumer = commit_group(kafka, sink, tid)
    try:
        if last_committed(kafka, consumer, c.topic) >= c.sequence:
            return  # committed: a live writer's producer of the id is left unfenced
        producer = kafka.Producer(sink.producer_config(tid))
        try:
            producer.init_transactions(FLUSH_TIMEOUT_S)
            if last_committed(kafka, consumer, c.topic) >= c.sequence:
                return
            _send_again(kafka, producer, consumer, c, checkpoint_id)
        finally:
            producer.flush(1)
    finally:
        consumer.close()


def _send_again(
    kafka: Any, producer: Any, consumer: Any, c: KafkaCommittable, checkpoint_id: int
) -> None:
    log.info(
        "KafkaSink sends the %d records of %s (checkpoint %s) again: checkpointed, never "
        "committed", len(c.records), c.transactional_id, checkpoint_id,
    )  # fmt: skip
    producer.begin_transaction()
    partitions = c.partitions if c.partitions is not None else repeat(PARTITION_ANY)
    try:
        for (key, value), partition in zip(c.records, partitions, strict=False):
            produce(producer, c.topic, key, value, partition)
        flush(producer)
        send_sequence(kafka, producer, consumer, c.topic, c.sequence, checkpoint_id)
        producer.commit_transaction(FLUSH_TIMEOUT_S)
    except BaseException:
        with contextlib.suppress(kafka.KafkaException):
            producer.abort_transaction(5)  # hold back no read_committed consumer
        raise
    check_committed(kafka, consumer, c.topic, c.transactional_id, c.sequence, checkpoint_id)


def fence(kafka: Any, sink: KafkaSink, transactional_id: str) -> None:
    """Fences every producer of the id and aborts its open transaction, if any."""
    producer = kafka.Producer(sink.producer_config(transactional_id))
    producer.init_transactions(FLUSH_TIMEOUT_S)
    producer.flush(1)


def _client_security(properties: dict[str, str]) -> dict[str, str]:
    """The settings a recovery consumer needs to reach the same brokers as the producers."""
    return {k: v for k, v in properties.items() if k.startswith(("security.", "sasl.", "ssl."))}


def produce(
    producer: Any, topic: str, key: bytes | None, value: bytes, partition: int = PARTITION_ANY
) -> None:
    """``partition``: PARTITION_ANY lets the client's partitioner choose."""
    deadline = None
    chosen: dict[str, int] = {} if partition == PARTITION_ANY else {"partition": partition}
    while True:
        try:
            producer.produce(topic, value, key, **chosen)
            return
        except BufferError:  # the local queue is full: let librdkafka send
            deadline = deadline or time.monotonic() + FLUSH_TIMEOUT_S
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"KafkaSink: the producer's queue stayed full for {FLUSH_TIMEOUT_S:.0f} s "
                    f"writing to {topic}; are the brokers reachable?"
                ) from None
            producer.poll(0.05)


def flush(producer: Any) -> None:
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if remaining:
        raise RuntimeError(
            f"KafkaSink: {remaining} records still unsent after {FLUSH_TIMEOUT_S:.0f} s; "
            "are the brokers reachable?"
        )
