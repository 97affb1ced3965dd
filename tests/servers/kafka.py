"""A Kafka-protocol broker with transactions for tests: the ``noida-db`` package's, started in
a temporary directory, or the cluster ``BARRIERFLOW_TEST_KAFKA=host:port`` names.

Tests use only what any Kafka cluster does: topics are created explicitly, data is read back
with a ``read_committed`` consumer. A broker the fixture started can be restarted (the fault
campaign does): stopped, then started again on the same port and data directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field


class BrokerProcess:
    """The broker the fixture started: its command, port and data directory, so that it can
    be stopped and started again as itself."""

    def __init__(self, root: str, port: int) -> None:
        self.root = root
        self.port = port
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(os.path.join(self.root, "broker.log"), "ab") as log:
            self._process = subprocess.Popen(
                [_noida_db(), "start", "--only", "kafka", "--kafka-port", str(self.port),
                 "--data-dir", os.path.join(self.root, "data")],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        _wait_for_port(self.port, self._process, self.root)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """``SIGTERM``: a clean shutdown; ``SIGKILL``: a crash."""
        if self._process is not None:
            _stop(self._process, sig)
            self._process = None


@dataclass(frozen=True)
class KafkaBroker:
    bootstrap_servers: str
    process: BrokerProcess | None = field(default=None, compare=False, repr=False)

    def restart(self, sig: signal.Signals = signal.SIGTERM, down_s: float = 0.0) -> None:
        """Stops the broker (``sig``), waits ``down_s``, starts it again on the same port with
        the same data: clients see their connections drop and come back."""
        if self.process is None:
            raise RuntimeError("only a broker the tests started can be restarted")
        self.process.stop(sig)
        time.sleep(down_s)
        self.process.start()

    def create_topic(self, name: str, partitions: int) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[
            name
        ].result(30)
        deadline = time.monotonic() + 30
        while len(admin.list_topics(name, timeout=10).topics[name].partitions) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} has not got its {partitions} partitions")
            time.sleep(0.1)
        return name

    def produce(self, topic: str, values: list[bytes], partition_of=None) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5})
        for i, value in enumerate(values):
            if partition_of is None:
                producer.produce(topic, value)
            else:
                producer.produce(topic, value, partition=partition_of(i))
        assert producer.flush(30) == 0

    def read_committed(self, topic: str, timeout_s: float = 30) -> list[tuple[int, int, bytes]]:
        """Every committed message of the topic: (partition, offset, value), read to the end."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"test-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "enable.auto.commit": False,
            }
        )
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        out, ended = [], set()
        deadline = time.monotonic() + timeout_s
        try:
            while len(ended) < len(partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{topic}: partitions {set(partitions) - ended} never ended")
                for m in consumer.consume(1000, timeout=0.5):
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            ended.add(m.partition())
                            continue
                        raise RuntimeError(m.error().str())
                    out.append((m.partition(), m.offset(), m.value()))
        finally:
            consumer.close()
        return out

    def held_back(self, topic: str, timeout_s: float = 30) -> list[HeldBack]:
        """The partitions whose ``read_committed`` readers stop before their high watermark,
        with what a ``read_uncommitted`` reader finds past that point: records a transaction
        that never ended holds back (Kafka ends every one: by a commit, an abort, a fence or
        its timeout; the test broker not always, bench/broker_transactions.py)."""
        out = []
        stable = self._ends(topic, "read_committed", timeout_s)
        marks = self._ends(topic, "read_uncommitted", timeout_s)
        for partition, end in sorted(stable.items()):
            if end >= marks[partition]:
                continue
            values = self._read_from(topic, partition, end, timeout_s)
            out.append(HeldBack(partition, end, marks[partition], values))
        return out

    def _read_from(self, topic: str, partition: int, offset: int, timeout_s: float) -> tuple:
        """What a ``read_uncommitted`` reader finds in the partition from ``offset`` on."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap_servers,
                             "group.id": f"test-{uuid.uuid4().hex}",
                             "isolation.level": "read_uncommitted", "enable.partition.eof": True,
                             "enable.auto.commit": False})  # fmt: skip
        consumer.assign([TopicPartition(topic, partition, offset)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                for m in consumer.consume(1000, timeout=0.5):
                    if m.error() is None:
                        values.append(m.value())
                    elif m.error().code() == KafkaError._PARTITION_EOF:
                        return tuple(values)
            raise TimeoutError(f"{topic}-{partition}: no end after {timeout_s:.0f} s")
        finally:
            consumer.close()

    def _ends(self, topic: str, isolation: str, timeout_s: float) -> dict[int, int]:
        """Per partition, the position a reader of ``isolation`` ends at."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap_servers,
                             "group.id": f"test-{uuid.uuid4().hex}",
                             "isolation.level": isolation, "enable.partition.eof": True,
                             "enable.auto.commit": False})  # fmt: skip
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        ends: dict[int, int] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while len(ends) < len(partitions):
                if time.monotonic() > deadline:
                    left = set(partitions) - set(ends)
                    raise TimeoutError(f"{topic}: partitions {left} never ended")
                for m in consumer.consume(1000, timeout=0.5):
                    if m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF:
                        ends[m.partition()] = m.offset()
        finally:
            consumer.close()
        return ends


@dataclass(frozen=True)
class HeldBack:
    """A partition's records past where ``read_committed`` readers stop (``stable_end``)."""

    partition: int
    stable_end: int
    high_watermark: int
    values: tuple[bytes, ...]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _noida_db() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "noida-db")
    found = beside if os.path.exists(beside) else shutil.which("noida-db")
    if not found:
        raise RuntimeError(
            "no Kafka broker for the tests: pip install noida-db (the test extras do), or set "
            "BARRIERFLOW_TEST_KAFKA=host:port to use a Kafka cluster"
        )
    return found


@contextlib.contextmanager
def kafka_broker() -> Iterator[KafkaBroker]:
    external = os.environ.get("BARRIERFLOW_TEST_KAFKA")
    if external:
        yield KafkaBroker(external)
        return
    root = tempfile.mkdtemp(prefix="barrierflow-kafka-")
    process = BrokerProcess(root, _free_port())
    try:
        process.start()
        yield KafkaBroker(f"127.0.0.1:{process.port}", process)
    finally:
        process.stop()
        shutil.rmtree(root, ignore_errors=True)


def _stop(broker: subprocess.Popen, first: signal.Signals = signal.SIGTERM) -> None:
    """The launcher and the broker it starts: its whole process group."""
    for sig in (first, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(broker.pid, sig)
        try:
            broker.wait(10)
            return
        except subprocess.TimeoutExpired:
            continue


def _wait_for_port(port: int, broker: subprocess.Popen, root: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        if broker.poll() is not None or time.monotonic() > deadline:
            with open(os.path.join(root, "broker.log")) as f:
                raise RuntimeError(f"the test Kafka broker did not start:\n{f.read()[-2000:]}")
        time.sleep(0.2)
