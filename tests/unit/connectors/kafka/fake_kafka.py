"""An in-memory stand-in for the parts of ``confluent_kafka`` KafkaSink uses, over a broker
that keeps Kafka's transaction rules: a transaction's records and its commit group's offset
become visible together at its commit, ``init_transactions`` fences the id's older producers
and aborts what they left open, and ``committed()`` answers only with committed offsets.

A restart tells every producer's ``error_cb`` that all brokers were down, as librdkafka does
with one broker. ``FakeBroker.restart(forget=True)`` does then what the test broker
(``noida-db``) does, and Kafka does not: it forgets every open transaction, records and group
offset; the records its producer sends after the restart go nowhere, while the group offset it
sends then is committed by its commit; and it acknowledges the commit of a transaction it
forgot (docs/reliability.md, seed 20261125000). Worse, a record sent into a forgotten
transaction after the restart is never ended, so ``read_committed`` readers stop before it for
good: ``values()`` shows no record committed after it, of any id (seed 5027).

Performs no I/O.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

OFFSET_INVALID = -1001


class KafkaException(Exception):
    pass


class KafkaError:
    _ALL_BROKERS_DOWN = -187
    _FATAL = -150

    def __init__(self, text: str, code: int = _FATAL) -> None:
        self._text = text
        self._code = code

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text


@dataclass
class TopicPartition:
    topic: str
    partition: int = 0
    offset: int = OFFSET_INVALID
    metadata: str | None = None


@dataclass
class _Transaction:
    records: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # commit group -> offset
    partitions: list[int] = field(default_factory=list)  # each record's (-1: unassigned)


@dataclass
class FakeBroker:
    visible: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)
    group_offsets: dict[str, int] = field(default_factory=dict)
    epochs: dict[str, int] = field(default_factory=dict)  # transactional id -> epoch
    open: dict[str, _Transaction] = field(default_factory=dict)  # transactional id ->
    forgetful: bool = False  # after a restart that forgot: commits of unknown ones "succeed"
    producers: list[_Producer] = field(default_factory=list)
    stable_end: int | None = None  # read_committed readers stop here: a record never ended
    partition_count: int = 4  # of every topic
    visible_partitions: list[int] = field(default_factory=list)  # each visible record's

    def restart(self, forget: bool) -> None:
        """``forget``: the test broker's restart; otherwise Kafka's (open transactions kept)."""
        for producer in self.producers:
            producer.errors.append(KafkaError("all brokers down", KafkaError._ALL_BROKERS_DOWN))
        if forget:
            self.open.clear()
            self.forgetful = True

    def values(self) -> list[bytes]:
        """What a ``read_committed`` reader sees."""
        return [value for _, _, value in self.visible[: self.stable_end]]

    def module(self) -> types.SimpleNamespace:
        """What ``require("confluent_kafka", ...)`` returns, bound to this broker."""
        broker = self
        return types.SimpleNamespace(
            KafkaError=KafkaError,
            KafkaException=KafkaException,
            TopicPartition=TopicPartition,
            Producer=lambda config: _Producer(broker, config),
            Consumer=lambda config: _Consumer(broker, config),
        )


class _Producer:
    def __init__(self, broker: FakeBroker, config: dict[str, Any]) -> None:
        self._broker = broker
        self._tid: str = config["transactional.id"]
        self._epoch = -1
        self._error_cb = config.get("error_cb")
        self.errors: list[KafkaError] = []  # for error_cb, at the next poll or flush
        self.in_transaction = False  # as the producer believes
        broker.producers.append(self)

    def _serve(self) -> None:
        errors, self.errors = self.errors, []
        for error in errors:
            if self._error_cb is not None:
                self._error_cb(error)

    def _check_fenced(self) -> None:
        if self._broker.epochs.get(self._tid) != self._epoch:
            raise KafkaException(KafkaError(f"producer of {self._tid} fenced by a newer one"))

    def init_transactions(self, timeout: float) -> None:
        self._broker.open.pop(self._tid, None)  # aborts what an older producer left open
        self._epoch = self._broker.epochs[self._tid] = self._broker.epochs.get(self._tid, -1) + 1

    def begin_transaction(self) -> None:
        self._check_fenced()
        self._broker.open[self._tid] = _Transaction()
        self.in_transaction = True

    def _transaction(self) -> _Transaction | None:
        return self._broker.open.get(self._tid)

    def produce(
        self, topic: str, value: bytes, key: bytes | None = None, partition: int = -1
    ) -> None:
        found = self._transaction()
        if found is not None:
            found.records.append((topic, key, value))
            found.partitions.append(partition)
        elif self.in_transaction and self._broker.stable_end is None:
            # a record of a forgotten transaction is never ended: it holds readers back
            self._broker.stable_end = len(self._broker.visible)

    def list_topics(self, topic: str, timeout: float) -> types.SimpleNamespace:
        partitions = {p: object() for p in range(self._broker.partition_count)}
        found = types.SimpleNamespace(partitions=partitions, error=None)
        return types.SimpleNamespace(topics={topic: found})

    def purge(self, in_queue: bool, in_flight: bool, blocking: bool) -> None:
        pass  # this broker takes each record as it is produced: nothing waits

    def poll(self, timeout: float) -> int:
        self._serve()
        return 0

    def flush(self, timeout: float) -> int:
        self._serve()
        return 0

    def send_offsets_to_transaction(self, offsets: list, group: str, timeout: float) -> None:
        self._check_fenced()
        found = self._broker.open.setdefault(self._tid, _Transaction())
        found.offsets[group] = offsets[0].offset

    def commit_transaction(self, timeout: float) -> None:
        self._check_fenced()
        self.in_transaction = False
        found = self._broker.open.pop(self._tid, None)
        if found is None:
            if self._broker.forgetful:
                return  # the test broker's answer to the commit of a transaction it forgot
            raise KafkaException(KafkaError(f"{self._tid} has no open transaction"))
        self._broker.visible += found.records
        self._broker.visible_partitions += found.partitions
        self._broker.group_offsets.update(found.offsets)

    def abort_transaction(self, timeout: float) -> None:
        self._check_fenced()
        self.in_transaction = False
        self._broker.open.pop(self._tid, None)


class _Consumer:
    def __init__(self, broker: FakeBroker, config: dict[str, Any]) -> None:
        self._broker = broker
        self._group: str = config["group.id"]

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list:
        offset = self._broker.group_offsets.get(self._group, OFFSET_INVALID)
        return [TopicPartition(p.topic, p.partition, offset) for p in partitions]

    def consumer_group_metadata(self) -> str:
        return self._group

    def close(self) -> None:
        pass
