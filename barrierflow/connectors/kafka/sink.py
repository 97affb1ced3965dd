"""KafkaSink: records to a topic; exactly once by Kafka transactions that a checkpoint commits.

EXACTLY_ONCE, per subtask: the records of one checkpoint interval go into one transaction,
flushed at the barrier (``sink_writer.py``) and committed when the checkpoint completes
(``sink_committer.py``). A committable carries the transaction's records and a sequence number,
so that a transaction a failure left uncommitted is sent again (``transactions.py``,
docs/adr/0008-kafka-exactly-once.md). AT_LEAST_ONCE flushes at the barrier off the task
thread and has the checkpoint acknowledged once every delivery was
(docs/adr/0030-kafka-at-least-once-flush-off-the-task-thread.md); NONE only sends.

**I/O:** ``check`` asks the brokers, on the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import (
    CommitterContext,
    JobSettings,
    Sink,
    SinkWriter,
    SinkWriterContext,
)
from barrierflow.connectors.kafka.record_serialization import KafkaRecordSerializationSchema
from barrierflow.connectors.kafka.sink_committable import KAFKA_COMMITTABLES, KafkaCommittable
from barrierflow.connectors.kafka.sink_committer import KafkaCommitter
from barrierflow.connectors.kafka.sink_writer import KafkaWriter, TransactionalKafkaWriter
from barrierflow.connectors.kafka.transactions import TRANSACTION_SLOTS
from barrierflow.errors import ConfigurationError

_DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000  # the brokers' default maximum (15 min)


class KafkaSink(Sink):
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
        if (
            delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
            and serializer.topic_selector is not None
        ):
            raise ConfigurationError(
                "KafkaSink with EXACTLY_ONCE cannot take a topic selector: it keeps the sequence "
                "number of each transaction in its one topic (docs/adr/0008-kafka-exactly-once"
                ".md), which a selector does not name. Use AT_LEAST_ONCE, or filter the stream "
                "into one KafkaSink per topic (set_topic)"
            )
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
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "linger.ms": 5,
            # The writers' delivery callbacks note failures only: a report of every success
            # was a Python call per record.
            "delivery.report.only.error": True,
        }
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
            if job.max_concurrent >= TRANSACTION_SLOTS:
                raise ConfigurationError(
                    f"KafkaSink with EXACTLY_ONCE keeps {TRANSACTION_SLOTS} transactions per "
                    f"subtask; max-concurrent-checkpoints {job.max_concurrent} needs more: set "
                    f"it below {TRANSACTION_SLOTS}"
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
        if self.serializer.topic is not None and self.serializer.topic not in topics:
            raise ConfigurationError(
                f"KafkaSink: topic {self.serializer.topic} does not exist on "
                f"{self.bootstrap_servers}; create it first"
            )

    def transactional_ids(self, job_name: str, operator_uid: str) -> Callable[[int, int], str]:
        """The transactional id of a subtask's slot: ``<prefix>-<subtask>-<slot>``."""
        prefix = self.transactional_id_prefix or f"{job_name}-{operator_uid}"
        return lambda subtask, slot: f"{prefix}-{subtask}-{slot}"

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            return TransactionalKafkaWriter(self, context)
        return KafkaWriter(self, context)

    def create_committer(self, context: CommitterContext) -> KafkaCommitter:
        """Whatever the guarantee: a snapshot taken with EXACTLY_ONCE may be restored into a
        job that writes with another, and its transactions must still settle."""
        return KafkaCommitter(self, context)

    def committable_codec(self) -> StructCodec[KafkaCommittable]:
        return KAFKA_COMMITTABLES

    def __repr__(self) -> str:
        topic = self.serializer.topic or self.serializer.topic_selector
        return f"KafkaSink({topic!r}, {self.delivery_guarantee.name})"


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
        assert self._serializer is not None  # a problem above otherwise
        return KafkaSink(
            self._servers or self._properties["bootstrap.servers"],
            self._serializer,
            self._guarantee,
            self._prefix,
            self._properties,
        )
