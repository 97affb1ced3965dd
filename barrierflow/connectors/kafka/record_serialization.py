"""Where and how KafkaSink writes a record: PyFlink's ``KafkaRecordSerializationSchema``, its
builder, ``KafkaTopicSelector`` for a topic chosen per record, and a ``KafkaPartitioner`` for
its partition. Performs no I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from barrierflow.connectors.kafka.key_group_partitioner import KafkaPartitioner
from barrierflow.errors import ConfigurationError


class KafkaTopicSelector(ABC):
    """Chooses the topic of each record (``set_topic_selector``)."""

    @abstractmethod
    def apply(self, data: Any) -> str: ...


class _FunctionTopicSelector(KafkaTopicSelector):
    """A plain function given to ``set_topic_selector``, as PyFlink adapts one."""

    def __init__(self, f: Callable[[Any], str]) -> None:
        self._f = f

    def apply(self, data: Any) -> str:
        return self._f(data)


class KafkaRecordSerializationSchema:
    """The record's topic (fixed, or chosen by a selector), key and value, and its partition
    where a partitioner chooses it."""

    def __init__(
        self,
        topic: str | None,
        value_schema: Any,
        key_schema: Any = None,
        topic_selector: KafkaTopicSelector | None = None,
        partitioner: KafkaPartitioner | None = None,
    ) -> None:
        self.topic = topic  # None: chosen per record by topic_selector
        self.value_schema = value_schema
        self.key_schema = key_schema
        self.topic_selector = topic_selector
        self.partitioner = partitioner  # None: the Kafka client's, by the record's key

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()

    def serialize(self, record: Any) -> tuple[bytes | None, bytes]:
        key = self.key_schema.serialize(record) if self.key_schema is not None else None
        return key, self.value_schema.serialize(record)

    def topic_of(self, record: Any) -> str:
        """The topic ``record`` goes to; a ``ValueError`` naming the record when the selector
        fails or returns no topic name."""
        if self.topic_selector is None:
            return self.topic  # type: ignore[return-value]  # set whenever there is no selector
        try:
            topic = self.topic_selector.apply(record)
        except Exception as e:
            raise ValueError(
                f"KafkaSink's topic selector failed on record {record!r:.200}: {e}"
            ) from e
        if not isinstance(topic, str) or not topic:
            raise ValueError(
                f"KafkaSink's topic selector returned {topic!r:.100} for record {record!r:.200}; "
                "it must return a topic name (a non-empty str)"
            )
        return topic


class KafkaRecordSerializationSchemaBuilder:
    """PyFlink's builder: a value schema, and either a topic or a topic selector."""

    def __init__(self) -> None:
        self._topic: str | None = None
        self._selector: KafkaTopicSelector | None = None
        self._value: Any = None
        self._key: Any = None
        self._partitioner: KafkaPartitioner | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        """One topic for every record."""
        self._topic = topic
        return self

    def set_topic_selector(
        self, topic_selector: KafkaTopicSelector | Callable[[Any], str]
    ) -> KafkaRecordSerializationSchemaBuilder:
        """The topic of each record, from a ``KafkaTopicSelector`` or a function of the record
        (the topics must exist; KafkaSink cannot check them before records arrive)."""
        if not isinstance(topic_selector, KafkaTopicSelector):
            if not callable(topic_selector):
                raise TypeError("topic_selector must be KafkaTopicSelector or a callable")
            topic_selector = _FunctionTopicSelector(topic_selector)
        self._selector = topic_selector
        return self

    def set_partitioner(
        self, partitioner: KafkaPartitioner
    ) -> KafkaRecordSerializationSchemaBuilder:
        """The partition of each record, chosen by ``partitioner`` (Flink's ``setPartitioner``;
        ``KeyGroupPartitioner`` writes a topic a job reads as a keyed stream) instead of the
        Kafka client's partitioner."""
        if not isinstance(partitioner, KafkaPartitioner):
            raise TypeError(
                f"set_partitioner needs a KafkaPartitioner (KeyGroupPartitioner), got "
                f"{partitioner!r:.200}"
            )
        self._partitioner = partitioner
        return self

    def set_value_serialization_schema(self, schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._value = schema
        return self

    def set_key_serialization_schema(self, schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._key = schema
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if self._selector is not None and self._topic is not None:
            raise ConfigurationError(
                "KafkaRecordSerializationSchema has both set_topic and set_topic_selector: "
                "keep one (a selector may return the same topic for every record)"
            )
        if self._selector is None and (not isinstance(self._topic, str) or not self._topic):
            raise ConfigurationError(
                "KafkaRecordSerializationSchema needs set_topic('name') or "
                "set_topic_selector(lambda record: 'name')"
            )
        for what, schema in (("value", self._value), ("key", self._key)):
            if (schema is not None or what == "value") and not callable(
                getattr(schema, "serialize", None)
            ):
                raise ConfigurationError(
                    f"KafkaRecordSerializationSchema needs a {what} serialization schema such "
                    f"as SimpleStringSchema(), got {schema!r:.200}"
                )
        return KafkaRecordSerializationSchema(
            self._topic, self._value, self._key, self._selector, self._partitioner
        )
