"""A Kafka topic read as a keyed stream on Spark (``DataStreamUtils.reinterpret_as_keyed_stream``):
a job writes it with KafkaSink and ``KeyGroupPartitioner``; a job reading it reinterpreted as
keyed, the keyed count chained to the source, gives record by record what the same job with
``key_by`` gives; a topic partitioned otherwise fails the job with the check's error."""

from __future__ import annotations

import json
import uuid

import pytest

from barrierflow.common import RestartStrategies, SimpleStringSchema
from barrierflow.datastream import DataStreamUtils, StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KeyGroupPartitioner,
)
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import JobExecutionError
from tests.jobs.odd_even import read_committed

pytestmark = pytest.mark.spark

N = 3000
PARALLELISM = 2
USERS = 37


def user_of(record: str) -> str:
    return json.loads(record)[0]


class RunningCount(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("n", None))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield [ctx.get_current_key(), json.loads(value)[1], n]


def env_with_checkpoints(tmp_path, name: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment().set_parallelism(PARALLELISM)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / name / "ckpt"))
    return env


def write_by_key_group(kafka, tmp_path, topic: str) -> None:
    """A job writes ``N`` records of ``USERS`` users, each to its key group's partition."""
    env = env_with_checkpoints(tmp_path, "writer")
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic(topic)
        .set_value_serialization_schema(SimpleStringSchema())
        .set_partitioner(KeyGroupPartitioner(user_of, PARALLELISM))
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(f"w-{topic}")
        .build()
    )
    env.from_source(NumberSequenceSource(1, N), "numbers").map(
        lambda i: json.dumps([f"user-{i % USERS}", i])
    ).sink_to(sink)
    env.execute("write by key group")


def read_and_count(kafka, tmp_path, topic: str, name: str, reinterpret: bool) -> list:
    env = env_with_checkpoints(tmp_path, name)
    env.set_restart_strategy(RestartStrategies.no_restart())
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_topics(topic)
        .set_group_id(f"g-{name}-{topic}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    records = env.from_source(source, "events")
    if reinterpret:
        keyed = DataStreamUtils.reinterpret_as_keyed_stream(records, user_of)
    else:
        keyed = records.key_by(user_of)
    out = str(tmp_path / name / "out")
    keyed.process(RunningCount()).uid("count").sink_to(FileSink(out))
    env.execute(name)
    return read_committed(out)


def test_a_topic_written_by_key_group_read_as_keyed_counts_as_key_by_does(spark, kafka, tmp_path):
    topic = kafka.create_topic(f"by-key-group-{uuid.uuid4().hex[:8]}", 2 * PARALLELISM)
    write_by_key_group(kafka, tmp_path, topic)

    reinterpreted = read_and_count(kafka, tmp_path, topic, "reinterpreted", reinterpret=True)
    shuffled = read_and_count(kafka, tmp_path, topic, "shuffled", reinterpret=False)

    # a user's records are in one partition, read in order either way: the same counts
    assert sorted(map(tuple, reinterpreted)) == sorted(map(tuple, shuffled))
    assert sorted(r[1] for r in reinterpreted) == list(range(1, N + 1))
    last = {}
    for user, _, n in reinterpreted:
        last[user] = max(last.get(user, 0), n)
    assert sum(last.values()) == N and len(last) == USERS


def test_a_topic_not_partitioned_by_key_group_fails_the_job_saying_so(spark, kafka, tmp_path):
    topic = kafka.create_topic(f"round-robin-{uuid.uuid4().hex[:8]}", 2 * PARALLELISM)
    values = [json.dumps([f"user-{i % USERS}", i]).encode() for i in range(1, 201)]
    kafka.produce(topic, values, partition_of=lambda i: i % (2 * PARALLELISM))

    with pytest.raises(JobExecutionError) as failed:
        read_and_count(kafka, tmp_path, topic, "mis-partitioned", reinterpret=True)

    text = str(failed.value)
    assert "operator 'count' (RunningCount)" in text, text
    assert "failed on record" in text
    assert "which is subtask" in text and "key groups" in text
    assert "not partitioned as key_by would partition it" in text
