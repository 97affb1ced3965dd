"""The test broker's transactions across a restart, on the broker alone (no barrierflow): what a
``read_committed`` reader sees where Kafka's documented behaviour keeps the data.

Each case uses a fresh topic of two partitions on the broker ``tests/servers`` starts
(``noida-db``), restarted by ``SIGTERM`` with its data directory kept, as the fault campaign
does. Transaction A writes 100 records to each partition; what follows depends on the case.
Then B (a new producer of A's transactional id, in some cases) and C (another id) each commit
10 records per partition. Kafka: ``init_transactions`` aborts what an older producer
of the id left open, and the coordinator aborts a transaction left open past
``transaction.timeout.ms``; either way A's records end, and B's and C's are readable.

    python bench/broker_transactions.py

prints, per case, the partitions' high watermarks, what ``read_uncommitted`` and
``read_committed`` readers see, and whether that is what Kafka gives. docs/reliability.md,
seed 5027, has a run's output.

**I/O:** one broker process, its clients.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.servers.kafka import KafkaBroker, kafka_broker

PARTITIONS = (0, 1)
TIMEOUT_MS = 3000  # transaction.timeout.ms of A's producer


def _producer(broker: KafkaBroker, tid: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "transactional.id": tid,
            "transaction.timeout.ms": TIMEOUT_MS,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    return producer


def _write(producer: Producer, topic: str, tag: str, n: int) -> None:
    for i in range(n):
        for p in PARTITIONS:
            producer.produce(topic, f"{tag}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def _commit(broker: KafkaBroker, topic: str, tag: str, tid: str) -> None:
    producer = _producer(broker, tid)
    _write(producer, topic, tag, 10)
    producer.commit_transaction(30)


def _read(broker: KafkaBroker, topic: str, isolation: str) -> dict[int, Counter]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in PARTITIONS])
    seen: dict[int, Counter] = {p: Counter() for p in PARTITIONS}
    ended: set[int] = set()
    deadline = time.monotonic() + 10
    while len(ended) < len(PARTITIONS) and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=0.3):
            if m.error() is None:
                seen[m.partition()][m.value().decode().split("-")[0]] += 1
            elif m.error().code() == KafkaError._PARTITION_EOF:
                ended.add(m.partition())
    consumer.close()
    return seen


def _ends(broker: KafkaBroker, topic: str, isolation: str) -> list[int]:
    """The partitions' ends as a reader of ``isolation`` is told them: the high watermark
    (read_uncommitted) or the last stable offset (read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "ends",
            "isolation.level": isolation,
        }
    )
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in PARTITIONS]
    consumer.close()
    return ends


def case(broker: KafkaBroker, name: str, restart: str, then: str) -> None:
    """``restart``: "" (none), "open" (with A open), "commit" (2 ms after A's commit is sent),
    "written" (with A open, then 50 more records per partition into A); ``then``: "fence" (B
    inits A's id), "timeout" (A left open past its timeout) or "" (A committed)."""
    topic = broker.create_topic(f"txn-{uuid.uuid4().hex[:8]}", len(PARTITIONS))
    tid = f"a-{topic}"
    a = _producer(broker, tid)
    _write(a, topic, "A", 100)
    if restart in ("open", "written"):
        broker.restart(down_s=1.0)
    if restart == "written":
        _write(a, topic, "A", 50)
    if restart == "commit":
        stop = threading.Timer(0.002, broker.restart, kwargs={"down_s": 1.0})
        stop.start()
        try:
            a.commit_transaction(30)
        except KafkaException as e:  # the stop may cut the answer; the readers tell the rest
            print(f"  A's commit: {e}")
        stop.join()
    if then == "fence":
        _commit(broker, topic, "B", tid)
    elif then == "timeout":
        time.sleep(TIMEOUT_MS / 1000 * 2)
    _commit(broker, topic, "C", f"c-{topic}")
    committed = _read(broker, topic, "read_committed")
    expected = {"A": 100, "C": 10} if restart == "commit" else {"C": 10}
    expected.update({"B": 10} if then == "fence" else {})
    as_kafka = all(committed[p] == Counter(expected) for p in PARTITIONS)
    print(f"{name}:")
    print(
        f"  high watermarks {_ends(broker, topic, 'read_uncommitted')}, "
        f"last stable offsets {_ends(broker, topic, 'read_committed')}"
    )
    for isolation, seen in (("read_uncommitted", _read(broker, topic, "read_uncommitted")),
                            ("read_committed", committed)):  # fmt: skip
        print(f"  {isolation:<16} " + "; ".join(
            f"partition {p}: " + " ".join(f"{k}={seen[p][k]}" for k in "ABC")
            for p in PARTITIONS))  # fmt: skip
    print(f"  as Kafka (read_committed: {expected} per partition): {'yes' if as_kafka else 'NO'}")


def main() -> None:
    with kafka_broker() as broker:
        case(broker, "A committed, the broker stopped 2 ms after the commit was sent", "commit", "")
        case(broker, "A open across a restart, then fenced by B", "open", "fence")
        case(broker, "A open across a restart, written to after it, fenced", "written", "fence")
        case(broker, "A left open past its transaction timeout, no restart", "", "timeout")


if __name__ == "__main__":
    main()
