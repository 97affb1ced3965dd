"""Internal: Kafka, a source of topic partitions and a transactional sink; their public names
are in ``barrierflow.datastream.connectors.kafka``. The names this package offered before are
deprecated: each warns and gives the public one. Needs confluent-kafka only where a job reads or
writes Kafka."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        **{
            n: f"barrierflow.datastream.connectors.kafka.{n}"
            for n in (
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
            )
        },
        **{
            n: f"barrierflow.datastream.formats.json.{n}"
            for n in ("JsonRowDeserializationSchema", "JsonRowSerializationSchema")
        },
        "DeliveryGuarantee": "barrierflow.datastream.connectors.DeliveryGuarantee",
        "SimpleStringSchema": "barrierflow.common.SimpleStringSchema",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
