"""The JSON, CSV and Avro row schemas through KafkaSink and KafkaSource against a real
Kafka-protocol broker: rows written are the rows read; a message a schema cannot read fails
naming its partition and offset, or is skipped where the program asked."""

from __future__ import annotations

import uuid

import pytest

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.connectors.kafka.partition_split import KafkaPartitionSplit
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.base import SinkWriterContext, SourceReaderContext
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from barrierflow.datastream.formats.avro import (
    AvroRowDeserializationSchema,
    AvroRowSerializationSchema,
)
from barrierflow.datastream.formats.csv import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from barrierflow.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)

ROW = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])
AVRO = (
    '{"type":"record","name":"R","fields":[{"name":"id","type":"int"},'
    '{"name":"name","type":"string"}]}'
)
SCHEMAS = {
    "json": (
        lambda: JsonRowSerializationSchema.builder().with_type_info(ROW).build(),
        lambda: JsonRowDeserializationSchema.builder().type_info(ROW).build(),
    ),
    "csv": (
        lambda: CsvRowSerializationSchema.Builder(ROW).build(),
        lambda: CsvRowDeserializationSchema.Builder(ROW).build(),
    ),
    "avro": (
        lambda: AvroRowSerializationSchema(avro_schema_string=AVRO),
        lambda: AvroRowDeserializationSchema(avro_schema_string=AVRO),
    ),
}


def read(kafka, topic: str, schema, stop: int) -> list:
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_topics(topic)
        .set_group_id(f"g-{topic}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(schema)
        .build()
    )
    reader = source.create_reader(SourceReaderContext("j", "s", 0, 1))
    reader.add_splits([KafkaPartitionSplit(topic, 0, 0, stop)])
    reader.notify_no_more_splits()
    out: list = []
    try:
        while (batch := reader.poll(100)) is not None:
            out += batch
    finally:
        reader.close()
    return out


@pytest.mark.parametrize("fmt", sorted(SCHEMAS))
def test_rows_written_by_a_row_schema_are_the_rows_read(kafka, fmt):
    topic = kafka.create_topic(f"t-{uuid.uuid4().hex[:12]}", 1)
    serializer, deserializer = SCHEMAS[fmt]
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(serializer())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    writer = sink.create_writer(SinkWriterContext("id", "job", "sink", 0, 1, 1))
    rows = [Row(i, f"name, {i}") for i in range(20)]
    writer.write(rows)
    writer.prepare_commit(1)
    writer.close()
    read_back = read(kafka, topic, deserializer(), 20)
    assert [(r.id, r.name) for r in read_back] == [(r[0], r[1]) for r in rows]


def test_a_bad_message_is_named_or_skipped_when_the_schema_ignores_parse_errors(kafka):
    topic = kafka.create_topic(f"t-{uuid.uuid4().hex[:12]}", 1)
    kafka.produce(topic, [b'{"id":1,"name":"a"}', b'{"id":"x"}', b'{"id":3,"name":"c"}'])
    with pytest.raises(ValueError, match=r"partition 0 offset 1 .*field 'id'"):
        read(kafka, topic, SCHEMAS["json"][1](), 3)
    lenient = JsonRowDeserializationSchema.builder().type_info(ROW).ignore_parse_errors().build()
    assert [r.id for r in read(kafka, topic, lenient, 3)] == [1, 3]
