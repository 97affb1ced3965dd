"""The odd/even running sums read from a Kafka topic and written to a Kafka topic (or any
sink), with optional injected faults. Shipped to Spark workers by value (cloudpickle)."""

from __future__ import annotations

import json
from typing import Any

import cloudpickle

from barrierflow.common import RestartStrategies, SimpleStringSchema
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from tests.jobs.odd_even import MAX_PARALLELISM, Fault, RunningSum, Throttle


class NumberSchema(SimpleStringSchema):
    """A deserialization schema that refuses a message that is not a decimal integer."""

    def deserialize(self, message: bytes) -> int:
        text = message.decode("utf-8", errors="replace")
        if not text.strip().lstrip("-").isdigit():
            raise ValueError(f"not a number: {text[:40]!r}")
        return int(text)

    def __repr__(self) -> str:
        return "NumberSchema()"


def kafka_sink(servers: str, topic: str, prefix: str) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .build()
    )


def build(
    env: StreamExecutionEnvironment,
    servers: str,
    in_topic: str,
    sink: Any,
    checkpoint_dir: str,
    fault: Fault | None = None,
    source_parallelism: int = 1,
    restarts: int = 3,
    as_json: bool = True,
    delay_s: float = 0.0003,
    deserializer: Any = None,
) -> StreamExecutionEnvironment:
    """``sink`` takes JSON text ``[key, value, sum]`` (``as_json``) or the tuple itself;
    ``deserializer``: the source's value schema (default ``SimpleStringSchema()``)."""
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(restarts, 200))
    env.set_max_parallelism(MAX_PARALLELISM)  # both keyed subtasks busy (odd_even.py)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(servers)
        .set_topics(in_topic)
        .set_group_id(f"sums-{in_topic}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(deserializer or SimpleStringSchema())
        .build()
    )
    numbers = env.from_source(source, "numbers").set_parallelism(source_parallelism)
    throttled = numbers.map(int).set_parallelism(source_parallelism)
    throttled = throttled.map(Throttle(delay_s, fault)).set_parallelism(source_parallelism)
    sums = throttled.uid("throttle").key_by(lambda x: x % 2).process(RunningSum()).uid("sums")
    if as_json:
        sums = sums.map(json.dumps)
    sums.sink_to(sink).uid("sink")
    return env


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
