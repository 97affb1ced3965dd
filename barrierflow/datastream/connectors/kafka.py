"""PyFlink's ``pyflink.datastream.connectors.kafka``: a source of topic partitions and a
transactional sink, with PyFlink's builders, built in ``barrierflow/connectors/kafka/``; and
barrierflow's ``KafkaPartitioner`` (Flink's ``FlinkKafkaPartitioner``) with
``KeyGroupPartitioner``, which writes a topic a job reads as a keyed stream.
confluent-kafka is needed only when a job reads or writes Kafka (``pip install
'barrierflow[kafka]'``): each name loads when first asked for.

``DeliveryGuarantee``, the JSON row schemas and ``SimpleStringSchema`` here are deprecated
(PyFlink has them in ``connectors``, ``formats.json`` and ``common``): they warn and give
those."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames, MovedNames

_KAFKA = "barrierflow.connectors.kafka"
_NAMES = LazyNames(
    __name__,
    {
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
        "KafkaPartitioner": f"{_KAFKA}.key_group_partitioner",
        "KeyGroupPartitioner": f"{_KAFKA}.key_group_partitioner",
    },
)
_MOVED = MovedNames(
    __name__,
    {
        "DeliveryGuarantee": "barrierflow.datastream.connectors.DeliveryGuarantee",
        "JsonRowDeserializationSchema": (
            "barrierflow.datastream.formats.json.JsonRowDeserializationSchema"
        ),
        "JsonRowSerializationSchema": (
            "barrierflow.datastream.formats.json.JsonRowSerializationSchema"
        ),
        "SimpleStringSchema": "barrierflow.common.SimpleStringSchema",
    },
)

__all__ = [
    "KafkaOffsetResetStrategy",
    "KafkaOffsetsInitializer",
    "KafkaPartitioner",
    "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder",
    "KafkaSink",
    "KafkaSinkBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "KafkaTopicPartition",
    "KafkaTopicSelector",
    "KeyGroupPartitioner",
]


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return _MOVED.get(name)
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.kafka.key_group_partitioner import (
        KafkaPartitioner,
        KeyGroupPartitioner,
    )
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
