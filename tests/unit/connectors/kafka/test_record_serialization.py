"""KafkaRecordSerializationSchema's builder and its topic selector: each record goes to the
topic the selector returns, through KafkaSink's writer (on a recording producer)."""

from __future__ import annotations

import types

import pytest

from barrierflow.common import Row, SimpleStringSchema
from barrierflow.connectors.kafka import sink_writer
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaRecordSerializationSchemaBuilder,
    KafkaSink,
    KafkaTopicSelector,
)
from barrierflow.errors import ConfigurationError


class ByCategory(KafkaTopicSelector):
    def apply(self, data):
        return "topic-" + data["category"]


class RecordingProducer:
    def __init__(self, config):
        self.sent = []

    def produce(self, topic, value, key):
        self.sent.append((topic, key, value))

    def poll(self, timeout):
        return 0

    def flush(self, timeout):
        return 0


def kafka_sink(serializer, guarantee=DeliveryGuarantee.AT_LEAST_ONCE):
    return (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(serializer)
        .set_delivery_guarantee(guarantee)
        .build()
    )


def written(serializer, records, monkeypatch):
    fake = types.SimpleNamespace(Producer=RecordingProducer)
    monkeypatch.setattr(sink_writer, "require", lambda *args: fake)
    writer = kafka_sink(serializer).create_writer(context=None)
    writer.write(records)
    return writer._producer.sent


def rows():
    return [Row(category="a", v="1"), Row(category="b", v="2"), Row(category="a", v="3")]


def value_of(row):
    return row["v"]


class ValueOf(SimpleStringSchema):
    def serialize(self, element):
        return super().serialize(value_of(element))


def test_builder_is_pyflinks_class():
    builder = KafkaRecordSerializationSchema.builder()
    assert isinstance(builder, KafkaRecordSerializationSchemaBuilder)


def test_a_topic_selector_routes_each_record_to_its_topic(monkeypatch):
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(ByCategory())
        .set_value_serialization_schema(ValueOf())
        .build()
    )
    assert written(serializer, rows(), monkeypatch) == [
        ("topic-a", None, b"1"),
        ("topic-b", None, b"2"),
        ("topic-a", None, b"3"),
    ]


def test_a_function_is_a_topic_selector(monkeypatch):
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda row: "t" + row["v"])
        .set_value_serialization_schema(ValueOf())
        .build()
    )
    sent = written(serializer, rows(), monkeypatch)
    assert [topic for topic, _, _ in sent] == ["t1", "t2", "t3"]


def test_a_fixed_topic_takes_every_record(monkeypatch):
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("all")
        .set_value_serialization_schema(ValueOf())
        .build()
    )
    assert {topic for topic, _, _ in written(serializer, rows(), monkeypatch)} == {"all"}


def test_a_selector_returning_no_topic_name_names_the_record(monkeypatch):
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(lambda row: None if row["v"] == "2" else "t")
        .set_value_serialization_schema(ValueOf())
        .build()
    )
    with pytest.raises(ValueError, match=r"returned None for record Row\(.*v='2'"):
        written(serializer, rows(), monkeypatch)


def test_a_topic_selector_must_be_a_selector_or_callable():
    with pytest.raises(TypeError, match="KafkaTopicSelector or a callable"):
        KafkaRecordSerializationSchema.builder().set_topic_selector("topic")


def test_a_topic_and_a_selector_together_are_refused():
    builder = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("t")
        .set_topic_selector(ByCategory())
        .set_value_serialization_schema(SimpleStringSchema())
    )
    with pytest.raises(ConfigurationError, match="both set_topic and set_topic_selector"):
        builder.build()


def test_exactly_once_with_a_topic_selector_is_refused():
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic_selector(ByCategory())
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    with pytest.raises(ConfigurationError, match="EXACTLY_ONCE cannot take a topic selector"):
        kafka_sink(serializer, DeliveryGuarantee.EXACTLY_ONCE)
