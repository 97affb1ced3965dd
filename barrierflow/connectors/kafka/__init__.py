"""Kafka: a source of topic partitions and a transactional sink, with PyFlink's builders.
Needs confluent-kafka: ``pip install 'barrierflow[kafka]'``. Each name loads when first asked
for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.lazy_names import LazyNames

_KAFKA = "barrierflow.connectors.kafka"
_NAMES = LazyNames(
    __name__,
    {
        "DeliveryGuarantee": "barrierflow.connectors.interfaces.delivery_guarantee",
        "JsonRowDeserializationSchema": "barrierflow.connectors.serialization",
        "JsonRowSerializationSchema": "barrierflow.connectors.serialization",
        "KafkaOffsetResetStrategy": f"{_KAFKA}.offsets",
        "KafkaOffsetsInitializer": f"{_KAFKA}.offsets",
        "KafkaRecordSerializationSchema": f"{_KAFKA}.record_serialization",
        "KafkaRecordSerializationSchemaBuilder": f"{_KAFKA}.record_serialization",
        "KafkaSink": f"{_KAFKA}.sink",
        "KafkaSinkBuilder": f"{_KAFKA}.sink",
        "KafkaSource": f"{_KAFKA}.source",
        "KafkaSourceBuilder": f"{_KAFKA}.source",
        "KafkaTopicPartition": f"{_KAFKA}.offsets",
        "KafkaTopicSelector": f"{_KAFKA}.record_serialization",
        "SimpleStringSchema": "barrierflow.connectors.serialization",
    },
)

__all__ = [
    "DeliveryGuarantee",
    "JsonRowDeserializationSchema",
    "JsonRowSerializationSchema",
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "SimpleStringSchema",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
    from barrierflow.connectors.kafka.offsets import (
        KafkaOffsetResetStrategy,
        KafkaOffsetsInitializer,
        KafkaTopicPartition,
    )
    from barrierflow.connectors.kafka.record_serialization import (
        KafkaRecordSerializationSchema,
        KafkaRecordSerializationSchemaBuilder,
        KafkaTopicSelector,
    )
    from barrierflow.connectors.kafka.sink import KafkaSink, KafkaSinkBuilder
    from barrierflow.connectors.kafka.source import KafkaSource, KafkaSourceBuilder
    from barrierflow.connectors.serialization import (
        JsonRowDeserializationSchema,
        JsonRowSerializationSchema,
        SimpleStringSchema,
    )
