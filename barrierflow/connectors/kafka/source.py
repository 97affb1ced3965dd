"""KafkaSource: topic partitions as replayable splits, their offsets in the checkpoint.

The enumerator (``source_enumerator.py``) finds the partitions, at the start and every
``partition.discovery.interval.ms``, and hands each to the subtask the owner rule names; the
readers (``source_reader.py``) read them, and their offsets are the source operator's state,
dealt out anew on a rescale. Offsets are committed to the consumer group when a checkpoint
completes, for monitoring only: recovery uses the checkpoint. Messages are read
``read_committed`` unless told otherwise, so only committed transactional data is seen.

**I/O:** ``check`` and the enumerator ask the brokers for metadata.
"""

from __future__ import annotations

import re
from typing import Any

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.source import Boundedness, Source, SourceReaderContext
from barrierflow.connectors.interfaces.split_enumerator import SplitEnumeratorContext
from barrierflow.connectors.kafka.offsets import KafkaOffsetsInitializer
from barrierflow.connectors.kafka.partition_split import (
    KAFKA_ENUMERATOR_STATES,
    KAFKA_PARTITION_SPLITS,
    KafkaEnumeratorState,
    KafkaPartitionSplit,
)
from barrierflow.connectors.kafka.source_enumerator import KafkaSourceEnumerator
from barrierflow.connectors.kafka.source_reader import KafkaSourceReader
from barrierflow.errors import ConfigurationError

_METADATA_TIMEOUT_S = 10.0
_OUR_PROPERTIES = {"partition.discovery.interval.ms"}


class KafkaSource(Source):
    def __init__(
        self,
        bootstrap_servers: str,
        topics: list[str] | None,
        topic_pattern: str | None,
        group_id: str | None,
        starting_offsets: KafkaOffsetsInitializer,
        stopping_offsets: KafkaOffsetsInitializer | None,
        deserializer: Any,
        properties: dict[str, str],
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.topic_pattern = topic_pattern
        self.group_id = group_id
        self.starting_offsets = starting_offsets
        self.stopping_offsets = stopping_offsets
        self.deserializer = deserializer
        self.properties = dict(properties)
        interval = self.properties.get("partition.discovery.interval.ms", 300_000)
        try:
            self.discovery_interval_ms = int(interval)
        except ValueError:
            raise ConfigurationError(
                f"KafkaSource: partition.discovery.interval.ms must be milliseconds, "
                f"got {interval!r}"
            ) from None
        if stopping_offsets is not None:
            self.discovery_interval_ms = 0  # a bounded source reads what it found at start

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    # --- configuration of the client ----------------------------------------------------------

    def consumer_config(self, group_id: str) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
        conf.update({k: v for k, v in self.properties.items() if k not in _OUR_PROPERTIES})
        return conf

    def metadata_consumer(self) -> Any:
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        return kafka.Consumer(self.consumer_config(self.group_id or "barrierflow-metadata"))

    def partitions(self, consumer: Any) -> list[tuple[str, int]]:
        """Every partition of the topics (or of the topics the pattern matches), sorted."""
        metadata = consumer.list_topics(timeout=_METADATA_TIMEOUT_S)
        if self.topics is not None:
            missing = [t for t in self.topics if t not in metadata.topics]
            if missing:
                raise ConfigurationError(
                    f"KafkaSource: topic(s) {', '.join(missing)} do not exist on "
                    f"{self.bootstrap_servers}; create them first (topics are never created "
                    "by the source)"
                )
            names = self.topics
        else:
            pattern = re.compile(self.topic_pattern or "")
            names = [t for t in metadata.topics if pattern.fullmatch(t)]
        return sorted((t, p) for t in names for p in metadata.topics[t].partitions)

    # --- the Source interface -----------------------------------------------------------------

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver, before submission: the brokers answer and the topics exist."""
        kafka = require("confluent_kafka", "kafka", "KafkaSource")
        consumer = self.metadata_consumer()
        try:
            self.partitions(consumer)
        except kafka.KafkaException as e:
            raise ConfigurationError(
                f"KafkaSource cannot reach the Kafka brokers at {self.bootstrap_servers}: "
                f"{e.args[0].str() if e.args else e}"
            ) from None
        finally:
            consumer.close()

    def create_enumerator(self, context: SplitEnumeratorContext) -> KafkaSourceEnumerator:
        return KafkaSourceEnumerator(self, context)

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: KafkaEnumeratorState
    ) -> KafkaSourceEnumerator:
        return KafkaSourceEnumerator.restore(self, context, state)

    def create_reader(self, context: SourceReaderContext) -> KafkaSourceReader:
        return KafkaSourceReader(self, context)

    def split_codec(self) -> StructCodec[KafkaPartitionSplit]:
        return KAFKA_PARTITION_SPLITS

    def enumerator_state_codec(self) -> StructCodec[KafkaEnumeratorState]:
        return KAFKA_ENUMERATOR_STATES

    @property
    def boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED if self.bounded else Boundedness.CONTINUOUS_UNBOUNDED

    @property
    def bounded(self) -> bool:
        return self.stopping_offsets is not None

    def __repr__(self) -> str:
        what = self.topics if self.topics is not None else f"pattern {self.topic_pattern!r}"
        return f"KafkaSource({self.bootstrap_servers!r}, {what})"


class KafkaSourceBuilder:
    """PyFlink's ``KafkaSource.builder()``."""

    def __init__(self) -> None:
        self._servers: str | None = None
        self._topics: list[str] | None = None
        self._pattern: str | None = None
        self._group_id: str | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._deserializer: Any = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, servers: str) -> KafkaSourceBuilder:
        self._servers = servers
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        if len(topics) == 1 and isinstance(topics[0], list | tuple):
            topics = tuple(topics[0])
        self._topics = list(topics)
        return self

    def set_topic_pattern(self, pattern: str) -> KafkaSourceBuilder:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ConfigurationError(f"KafkaSource topic pattern {pattern!r}: {e}") from None
        self._pattern = pattern
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._group_id = group_id
        return self

    def set_starting_offsets(self, initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._starting = _initializer(initializer, "set_starting_offsets")
        return self

    def set_bounded(self, initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._stopping = _initializer(initializer, "set_bounded")
        return self

    def set_value_only_deserializer(self, schema: Any) -> KafkaSourceBuilder:
        if not callable(getattr(schema, "deserialize", None)):
            raise ConfigurationError(
                f"KafkaSource needs a deserialization schema such as SimpleStringSchema(), "
                f"got {schema!r:.200}"
            )
        self._deserializer = schema
        return self

    def set_property(self, key: str, value: Any) -> KafkaSourceBuilder:
        self._properties[key] = str(value)
        return self

    def set_properties(self, properties: dict[str, Any]) -> KafkaSourceBuilder:
        for k, v in properties.items():
            self.set_property(k, v)
        return self

    def build(self) -> KafkaSource:
        problems = []
        if not self._servers and "bootstrap.servers" not in self._properties:
            problems.append("set_bootstrap_servers('host:9092')")
        if (self._topics is None) == (self._pattern is None):
            problems.append("exactly one of set_topics(...) and set_topic_pattern(...)")
        elif self._topics is not None and not all(isinstance(t, str) and t for t in self._topics):
            problems.append(f"topic names, got {self._topics!r}")
        if self._deserializer is None:
            problems.append("set_value_only_deserializer(SimpleStringSchema())")
        if problems:
            raise ConfigurationError("KafkaSource needs " + "; ".join(problems))
        return KafkaSource(
            self._servers or self._properties["bootstrap.servers"],
            self._topics,
            self._pattern,
            self._group_id or self._properties.get("group.id"),
            self._starting,
            self._stopping,
            self._deserializer,
            self._properties,
        )


def _initializer(value: Any, method: str) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise ConfigurationError(
            f"KafkaSource.{method} needs a KafkaOffsetsInitializer such as "
            f"KafkaOffsetsInitializer.earliest(), got {value!r:.200}"
        )
    return value
