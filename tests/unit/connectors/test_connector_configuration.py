"""Connector configuration refused with a clear error, before any server is contacted; the
pure rules connectors share."""

from __future__ import annotations

from collections import Counter

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.kafka.partition_assignment import owner
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from barrierflow.datastream.formats.json import JsonRowDeserializationSchema
from barrierflow.errors import ConfigurationError


def test_a_missing_client_library_names_the_extra_that_installs_it():
    with pytest.raises(ImportError, match=r"pip install 'barrierflow\[kafka\]'"):
        require("no_such_client_library", "kafka", "KafkaSource")


def test_delivery_guarantees_parse_flink_names_and_refuse_others():
    assert DeliveryGuarantee.parse("exactly_once", "S") is DeliveryGuarantee.EXACTLY_ONCE
    assert DeliveryGuarantee.parse("at-least-once", "S") is DeliveryGuarantee.AT_LEAST_ONCE
    with pytest.raises(ValueError, match="'twice' is not one of EXACTLY_ONCE"):
        DeliveryGuarantee.parse("twice", "S")


def test_a_kafka_source_without_servers_topics_or_deserializer_names_each_missing_part():
    with pytest.raises(ConfigurationError) as e:
        KafkaSource.builder().build()
    for part in ("set_bootstrap_servers", "set_topics", "set_value_only_deserializer"):
        assert part in str(e.value)
    with pytest.raises(ConfigurationError, match="exactly one of set_topics"):
        (
            KafkaSource.builder().set_bootstrap_servers("b:9092").set_topics("a")
            .set_topic_pattern("a.*").set_value_only_deserializer(SimpleStringSchema()).build()
        )  # fmt: skip
    with pytest.raises(ConfigurationError, match="needs a KafkaOffsetsInitializer"):
        KafkaSource.builder().set_starting_offsets("earliest")
    with pytest.raises(ConfigurationError, match="must be an integer >= 0"):
        KafkaOffsetsInitializer.offsets({("t", 0): -5})


def test_a_kafka_sink_without_a_serializer_or_with_a_bad_guarantee_is_refused():
    with pytest.raises(ConfigurationError, match="set_record_serializer"):
        KafkaSink.builder().set_bootstrap_servers("b:9092").build()
    with pytest.raises(ConfigurationError, match="needs set_topic"):
        KafkaRecordSerializationSchema.builder().build()
    with pytest.raises(ConfigurationError, match="not one of"):
        KafkaSink.builder().set_delivery_guarantee("sometimes")


def test_partitions_of_a_topic_go_round_the_subtasks_evenly_whatever_the_parallelism():
    for parallelism in (1, 2, 3, 5):
        load = Counter(owner("events", p, parallelism) for p in range(10 * parallelism))
        assert sorted(load) == list(range(parallelism))
        assert set(load.values()) == {10}


def test_a_json_message_that_is_not_json_is_refused_as_such():
    assert JsonRowDeserializationSchema().deserialize(b'{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(ValueError, match="not JSON"):
        JsonRowDeserializationSchema().deserialize(b"{oops")
