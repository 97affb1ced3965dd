"""Kafka: a source of topic partitions and a transactional sink, with PyFlink's builders.
Needs confluent-kafka: ``pip install 'barrierflow[kafka]'``."""

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
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
