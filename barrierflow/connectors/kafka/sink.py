"""KafkaSink: records to a topic; exactly once by Kafka transactions that a checkpoint commits.

EXACTLY_ONCE, per subtask: the records of one checkpoint interval go into one transaction,
flushed at the barrier and committed when the checkpoint completes. librdkafka cannot resume a
transaction another producer opened, and ``init_transactions`` aborts an open transaction of
its id, so a committable carries the transaction's records (their bytes) and a sequence number
the transaction commits as a consumer-group offset: after a failure, a restored committable
whose number the group has not reached is sent again in a new transaction. See
docs/adr/0008-kafka-exactly-once.md.

Transactional ids are ``<prefix>-<subtask>-<slot>`` with a few slots per subtask, reused, so
that a new attempt's ``init_transactions`` fences every producer of the attempts before it and
aborts what they left open.

AT_LEAST_ONCE flushes and checks every delivery at the barrier; NONE only sends.

**Threading:** a writer is used by its subtask's task thread only (librdkafka's threads call
back into ``_delivered``, which only appends).
**I/O:** per slot in use, a producer and a consumer of its commit group (never subscribed).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.optional_dependency import require
from barrierflow.connectors.sink import JobSettings, SinkWriterContext
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.connectors.kafka")

_DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000  # the brokers' default maximum (15 min)
_TRANSACTION_SLOTS = 4  # transactions a subtask may have open or awaiting their checkpoint
_FLUSH_TIMEOUT_S = 60.0


class KafkaRecordSerializationSchema:
    """Where and how a record is written: PyFlink's builder."""

    def __init__(self, topic: str, value_schema: Any, key_schema: Any = None) -> None:
        self.topic = topic
        self.value_schema = value_schema
        self.key_schema = key_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, record: Any) -> tuple[bytes | None, bytes]:
        key = self.key_schema.serialize(record) if self.key_schema is not None else None
        return key, self.value_schema.serialize(record)


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._value: Any = None
        self._key: Any = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic = topic
        return self

    def set_value_serialization_schema(self, schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._value = schema
        return self

    def set_key_serialization_schema(self, schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._key = schema
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if not isinstance(self._topic, str) or not self._topic:
            raise ConfigurationError("KafkaRecordSerializationSchema needs set_topic('name')")
        for what, schema in (("value", self._value), ("key", self._key)):
            if (schema is not None or what == "value") and not callable(
                getattr(schema, "serialize", None)
            ):
                raise ConfigurationError(
                    f"KafkaRecordSerializationSchema needs a {what} serialization schema such "
                    f"as SimpleStringSchema(), got {schema!r:.200}"
                )
        return KafkaRecordSerializationSchema(self._topic, self._value, self._key)


class KafkaSink:
    def __init__(
        self,
        bootstrap_servers: str,
        serializer: KafkaRecordSerializationSchema,
        delivery_guarantee: DeliveryGuarantee,
        transactional_id_prefix: str | None,
        properties: dict[str, str],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.serializer = serializer
        self.delivery_guarantee = delivery_guarantee
        self.transactional_id_prefix = transactional_id_prefix
        self.properties = dict(properties)
        timeout = self.properties.setdefault(
            "transaction.timeout.ms", str(_DEFAULT_TRANSACTION_TIMEOUT_MS)
        )
        try:
            self.transaction_timeout_ms = int(timeout)
        except ValueError:
            raise ConfigurationError(
                f"KafkaSink: transaction.timeout.ms must be milliseconds, got {timeout!r}"
            ) from None

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    def producer_config(self, transactional_id: str | None = None) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5}
        if self.delivery_guarantee is not DeliveryGuarantee.NONE:
            conf.update({"acks": "all", "enable.idempotence": True})
        conf.update(self.properties)
        if transactional_id is None:
            conf.pop("transaction.timeout.ms", None)
        else:
            conf["transactional.id"] = transactional_id
        return conf

    def check(self, job: JobSettings) -> None:
        """On the driver: the brokers answer, the topic exists, and a transaction outlives the
        longest a checkpoint may take to complete after its first record."""
        kafka = require("confluent_kafka", "kafka", "KafkaSink")
        if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            if not job.checkpointing:
                raise ConfigurationError(
                    "KafkaSink with EXACTLY_ONCE commits at checkpoints, but checkpointing is "
                    "off: enable it (env.enable_checkpointing(ms)) or use AT_LEAST_ONCE"
                )
            if job.max_concurrent >= _TRANSACTION_SLOTS:
                raise ConfigurationError(
                    f"KafkaSink with EXACTLY_ONCE keeps {_TRANSACTION_SLOTS} transactions per "
                    f"subtask; max-concurrent-checkpoints {job.max_concurrent} needs more: set "
                    f"it below {_TRANSACTION_SLOTS}"
                )
            longest = job.interval_ms + job.timeout_ms
            if self.transaction_timeout_ms < longest:
                raise ConfigurationError(
                    f"KafkaSink: transaction.timeout.ms = {self.transaction_timeout_ms} is shorter "
                    f"than the checkpoint interval plus the checkpoint timeout ({job.interval_ms} "
                    f"+ {job.timeout_ms} ms): a transaction could be aborted by the brokers before "
                    f"its checkpoint commits it. Raise transaction.timeout.ms (at most the "
                    "brokers' transaction.max.timeout.ms) or shorten the checkpoint timeout"
                )
        admin = kafka.admin.AdminClient({"bootstrap.servers": self.bootstrap_servers})
        try:
            topics = admin.list_topics(timeout=10).topics
        except kafka.KafkaException as e:
            raise ConfigurationError(
                f"KafkaSink cannot reach the Kafka brokers at {self.bootstrap_servers}: "
                f"{e.args[0].str() if e.args else e}"
            ) from None
        if self.serializer.topic not in topics:
            raise ConfigurationError(
                f"KafkaSink: topic {self.serializer.topic} does not exist on "
                f"{self.bootstrap_servers}; create it first"
            )

    def create_writer(self, context: SinkWriterContext) -> Any:
        if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            return TransactionalKafkaWriter(self, context)
        return KafkaWriter(self, context)

    def __repr__(self) -> str:
        return f"KafkaSink({self.serializer.topic!r}, {self.delivery_guarantee.name})"


class KafkaWriter:
    """NONE and AT_LEAST_ONCE: one idempotent producer; AT_LEAST_ONCE checks at the barrier
    that every record sent since the last one was acknowledged."""

    def __init__(self, sink: KafkaSink, context: SinkWriterContext) -> None:
        self._kafka = require("confluent_kafka", "kafka", "KafkaSink")
        self._sink = sink
        self._context = context
        self._serialize = sink.serializer.serialize
        self._topic = sink.serializer.topic
        self._errors: list[str] = []
        self._producer = self._kafka.Producer(
            {**sink.producer_config(), "on_delivery": self._delivered}
        )

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(f"{error.str()} (topic {message.topic()})")

    def write(self, records: list[Any]) -> None:
        for record in records:
            key, value = _serialized(self._serialize, record)
            _produce(self._producer, self._topic, key, value)
        self._producer.poll(0)

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        if self._sink.delivery_guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            _flush(self._producer)
            if self._errors:
                errors, self._errors = self._errors, []
                raise RuntimeError(
                    f"KafkaSink: {len(errors)} records were not delivered: {errors[0]}"
                )
        return []

    def commit(self, committables: list[dict]) -> None:
        pass

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """A snapshot taken with EXACTLY_ONCE may be restored into a job that writes with
        another guarantee: its transactions are settled all the same."""
        if committables:
            TransactionalKafkaWriter(self._sink, self._context).recover(committables, parallelism)

    def close(self) -> None:
        self._producer.flush(10)


class _Transaction:
    """One transaction: its slot, its sequence number, and its records (kept for a resend)."""

    __slots__ = ("records", "sequence", "slot")

    def __init__(self, slot: int, sequence: int) -> None:
        self.slot = slot
        self.sequence = sequence
        self.records: list[list] = []  # [key, value]


class _Slot:
    """A transactional id's producer, and a consumer of its commit group (whose committed
    offset is the sequence number of the id's last committed transaction)."""

    __slots__ = ("consumer", "next_sequence", "producer")

    def __init__(self, producer: Any, consumer: Any, next_sequence: int) -> None:
        self.producer = producer
        self.consumer = consumer
        self.next_sequence = next_sequence


class TransactionalKafkaWriter:
    def __init__(self, sink: KafkaSink, context: SinkWriterContext) -> None:
        self._kafka = require("confluent_kafka", "kafka", "KafkaSink")
        self._sink = sink
        self._serialize = sink.serializer.serialize
        self._topic = sink.serializer.topic
        self._subtask = context.subtask
        self._previous_parallelism = context.previous_parallelism
        self._prefix = sink.transactional_id_prefix or f"{context.job_name}-{context.operator_uid}"
        self._slots: dict[int, _Slot] = {}
        self._errors: list[str] = []  # deliveries refused, from librdkafka's callback
        self._current: _Transaction | None = None
        self._pending: dict[int, _Transaction] = {}  # slot -> pre-committed, not committed

    def transactional_id(self, subtask: int, slot: int) -> str:
        return f"{self._prefix}-{subtask}-{slot}"

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self._errors.append(f"{error.str()} (topic {message.topic()}, {len(message)} bytes)")

    def _commit_group(self, transactional_id: str) -> Any:
        """A consumer of the id's commit group: never subscribed, it reads the group's
        committed offset and lends its metadata to ``send_offsets_to_transaction``."""
        return self._kafka.Consumer(
            {
                "bootstrap.servers": self._sink.bootstrap_servers,
                "group.id": f"{transactional_id}.commits",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                **_client_security(self._sink.properties),
            }
        )

    def _last_committed(self, consumer: Any, topic: str) -> int:
        """The sequence number of the id's last committed transaction; -1: none. (The
        offset is kept under partition 0 of the sink's topic: any partition would do.)"""
        (tp,) = consumer.committed([self._kafka.TopicPartition(topic, 0)], _FLUSH_TIMEOUT_S)
        return tp.offset if tp.offset >= 0 else -1

    def _slot(self, slot: int) -> _Slot:
        found = self._slots.get(slot)
        if found is None:
            tid = self.transactional_id(self._subtask, slot)
            producer = self._kafka.Producer(
                {**self._sink.producer_config(tid), "on_delivery": self._delivered}
            )
            producer.init_transactions(_FLUSH_TIMEOUT_S)  # fences older producers of this id
            consumer = self._commit_group(tid)
            found = self._slots[slot] = _Slot(
                producer, consumer, self._last_committed(consumer, self._topic) + 1
            )
        return found

    # --- writing ------------------------------------------------------------------------------

    def write(self, records: list[Any]) -> None:
        if not records:
            return
        txn = self._current
        if txn is None:
            txn = self._current = self._begin()
        producer = self._slots[txn.slot].producer
        for record in records:
            key, value = _serialized(self._serialize, record)
            _produce(producer, self._topic, key, value)
            txn.records.append([key, value])
        producer.poll(0)

    def _begin(self) -> _Transaction:
        free = [s for s in range(_TRANSACTION_SLOTS) if s not in self._pending]
        if not free:
            raise RuntimeError(
                f"KafkaSink subtask {self._subtask}: {_TRANSACTION_SLOTS} transactions await "
                "checkpoints that have not completed; checkpoints are failing or too slow"
            )
        slot = self._slot(free[0])
        txn = _Transaction(free[0], slot.next_sequence)
        slot.next_sequence += 1
        slot.producer.begin_transaction()
        return txn

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        txn = self._current
        if txn is None:
            return []
        slot = self._slots[txn.slot]
        _flush(slot.producer)
        if self._errors:
            errors, self._errors = self._errors, []
            raise RuntimeError(
                f"KafkaSink: {len(errors)} records of transaction "
                f"{self.transactional_id(self._subtask, txn.slot)} were refused: {errors[0]}"
            )
        self._send_sequence(slot.producer, slot.consumer, self._topic, txn.sequence, checkpoint_id)
        self._current = None
        self._pending[txn.slot] = txn
        return [
            {
                "transactional_id": self.transactional_id(self._subtask, txn.slot),
                "subtask": self._subtask,
                "slot": txn.slot,
                "sequence": txn.sequence,
                "checkpoint_id": checkpoint_id,
                "topic": self._topic,
                "records": txn.records,
            }
        ]

    def _send_sequence(
        self, producer: Any, consumer: Any, topic: str, sequence: int, checkpoint_id: int
    ) -> None:
        """Makes the transaction commit its sequence number as its commit group's offset."""
        producer.send_offsets_to_transaction(
            [
                self._kafka.TopicPartition(
                    topic, 0, sequence, metadata=f"checkpoint {checkpoint_id}"
                )
            ],
            consumer.consumer_group_metadata(),
            _FLUSH_TIMEOUT_S,
        )

    # --- committing ---------------------------------------------------------------------------

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            txn = self._pending.get(c["slot"]) if c["subtask"] == self._subtask else None
            if txn is None or txn.sequence != c["sequence"]:
                self._ensure_committed(c)  # not this writer's: a restored one
                continue
            del self._pending[txn.slot]
            try:
                self._slots[txn.slot].producer.commit_transaction(_FLUSH_TIMEOUT_S)
            except self._kafka.KafkaException as e:
                # Fenced (a newer attempt runs: this one is a zombie) or aborted by the
                # brokers (a timeout bumps the producer's epoch too): the two look alike, so
                # never resend from here. The job restarts; recovery commits the records.
                raise RuntimeError(
                    f"KafkaSink could not commit {c['transactional_id']} of checkpoint "
                    f"{c.get('checkpoint_id')}: {e.args[0].str() if e.args else e}; after a "
                    "restart, recovery commits its records from the checkpoint"
                ) from e

    def _ensure_committed(self, c: dict) -> None:
        """Idempotent: the committable's records end up committed exactly once in the topic.

        After ``init_transactions`` of its id (which aborts it if it is still open), the id's
        commit group tells whether it committed: a transaction commits its sequence number as
        the group's offset, and an id's next transaction starts only once this one is settled,
        so an offset at or past its number means committed. Otherwise its records are sent
        again, with the same number, in a new transaction."""
        tid = c["transactional_id"]
        producer = self._kafka.Producer(self._sink.producer_config(tid))
        consumer = self._commit_group(tid)
        try:
            producer.init_transactions(_FLUSH_TIMEOUT_S)
            if self._last_committed(consumer, c["topic"]) >= c["sequence"]:
                return
            log.info(
                "KafkaSink subtask %d sends the %d records of %s (checkpoint %s) again: "
                "checkpointed, never committed", self._subtask, len(c["records"]), tid,
                c.get("checkpoint_id"),
            )  # fmt: skip
            producer.begin_transaction()
            try:
                for key, value in c["records"]:
                    _produce(producer, c["topic"], key, value)
                _flush(producer)
                self._send_sequence(
                    producer, consumer, c["topic"], c["sequence"], c.get("checkpoint_id", -1)
                )
                producer.commit_transaction(_FLUSH_TIMEOUT_S)
            except BaseException:
                with contextlib.suppress(self._kafka.KafkaException):
                    producer.abort_transaction(5)  # hold back no read_committed consumer
                raise
        finally:
            producer.flush(1)
            consumer.close()

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """Makes the restored committables whose owner maps here committed, then fences and
        aborts every other transaction this subtask's share of the old subtasks left open,
        so that none holds back read_committed consumers."""
        for c in committables:
            if c["subtask"] % parallelism == self._subtask:
                self._ensure_committed(c)
        old = max(self._previous_parallelism or 0, parallelism)
        for o in range(self._subtask, old, parallelism):
            for slot in range(_TRANSACTION_SLOTS):
                self._abort(self.transactional_id(o, slot))

    def _abort(self, transactional_id: str) -> None:
        producer = self._kafka.Producer(self._sink.producer_config(transactional_id))
        producer.init_transactions(_FLUSH_TIMEOUT_S)
        producer.flush(1)

    def _close_slot(self, slot: int) -> None:
        found = self._slots.pop(slot, None)
        if found is not None:
            found.producer.flush(1)
            found.consumer.close()

    def close(self) -> None:
        """Aborts the open transaction (its records go nowhere: they were never checkpointed)
        and every pre-committed one (a restore sends their records again from the
        checkpoint), so that no open transaction holds back read_committed consumers."""
        for slot, found in list(self._slots.items()):
            current = self._current is not None and self._current.slot == slot
            if current or slot in self._pending:
                try:
                    found.producer.abort_transaction(5)
                except self._kafka.KafkaException as e:
                    log.debug("KafkaSink: abort on close of slot %d failed: %s", slot, e)
            self._close_slot(slot)


class KafkaSinkBuilder:
    """PyFlink's ``KafkaSink.builder()``."""

    def __init__(self) -> None:
        self._servers: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, servers: str) -> KafkaSinkBuilder:
        self._servers = servers
        return self

    def set_record_serializer(self, serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        if not isinstance(serializer, KafkaRecordSerializationSchema):
            raise ConfigurationError(
                "KafkaSink.set_record_serializer needs KafkaRecordSerializationSchema.builder()"
                f"...build(), got {serializer!r:.200}"
            )
        self._serializer = serializer
        return self

    def set_delivery_guarantee(self, guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        try:
            self._guarantee = DeliveryGuarantee.parse(guarantee, "KafkaSink")
        except ValueError as e:
            raise ConfigurationError(str(e)) from None
        return self

    def set_transactional_id_prefix(self, prefix: str) -> KafkaSinkBuilder:
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"KafkaSink transactional id prefix: got {prefix!r}")
        self._prefix = prefix
        return self

    def set_property(self, key: str, value: Any) -> KafkaSinkBuilder:
        self._properties[key] = str(value)
        return self

    def build(self) -> KafkaSink:
        problems = []
        if not self._servers and "bootstrap.servers" not in self._properties:
            problems.append("set_bootstrap_servers('host:9092')")
        if self._serializer is None:
            problems.append("set_record_serializer(KafkaRecordSerializationSchema...)")
        if problems:
            raise ConfigurationError("KafkaSink needs " + "; ".join(problems))
        return KafkaSink(
            self._servers or self._properties["bootstrap.servers"],
            self._serializer,
            self._guarantee,
            self._prefix,
            self._properties,
        )


def _client_security(properties: dict[str, str]) -> dict[str, str]:
    """The settings a recovery consumer needs to reach the same brokers as the producers."""
    return {k: v for k, v in properties.items() if k.startswith(("security.", "sasl.", "ssl."))}


def _serialized(serialize: Any, record: Any) -> tuple[bytes | None, bytes]:
    try:
        return serialize(record)
    except Exception as e:
        raise ValueError(f"KafkaSink cannot serialize record {record!r:.200}: {e}") from e


def _produce(producer: Any, topic: str, key: bytes | None, value: bytes) -> None:
    deadline = None
    while True:
        try:
            producer.produce(topic, value, key)
            return
        except BufferError:  # the local queue is full: let librdkafka send
            deadline = deadline or time.monotonic() + _FLUSH_TIMEOUT_S
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"KafkaSink: the producer's queue stayed full for {_FLUSH_TIMEOUT_S:.0f} s "
                    f"writing to {topic}; are the brokers reachable?"
                ) from None
            producer.poll(0.05)


def _flush(producer: Any) -> None:
    remaining = producer.flush(_FLUSH_TIMEOUT_S)
    if remaining:
        raise RuntimeError(
            f"KafkaSink: {remaining} records still unsent after {_FLUSH_TIMEOUT_S:.0f} s; "
            "are the brokers reachable?"
        )
