"""KafkaSink AT_LEAST_ONCE under a killed process: its flush runs off the task thread, and a
checkpoint completes only once the brokers acknowledged every record written before its
barrier. The sink's process is SIGKILLed as soon as it hears a checkpoint completed, with a
producer that lingers a second before it sends (what it still queues dies with it): the topic
must still hold every running sum of the failure-free run, duplicates allowed, nothing lost."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from tests.jobs import kafka_sums
from tests.jobs.kill_after_completion import KillAfterCompletion

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000


def expected_sums(n: int) -> set[tuple[int, int, int]]:
    """(key, value, running sum of the key): what a failure-free run writes, each once."""
    totals = [0, 0]
    rows = set()
    for value in range(1, n + 1):
        totals[value % 2] += value
        rows.add((value % 2, value, totals[value % 2]))
    return rows


def test_a_kill_right_after_a_checkpoint_completed_loses_no_record(spark, kafka, tmp_path):
    numbers = kafka.create_topic(f"numbers-alo-{uuid.uuid4().hex[:8]}", 1)
    kafka.produce(numbers, [str(i).encode() for i in range(1, N + 1)])
    out = kafka.create_topic(f"sums-alo-{uuid.uuid4().hex[:8]}", 2)
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(out)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .set_property("linger.ms", 1000)  # records wait in the producer unless flushed
        .build()
    )
    marker = str(tmp_path / "killed")
    env = StreamExecutionEnvironment().set_parallelism(2)
    kafka_sums.build(
        env, kafka.bootstrap_servers, numbers, KillAfterCompletion(sink, marker),
        str(tmp_path / "ckpt"),
    )  # fmt: skip
    result = env.execute("kafka-sums-at-least-once")

    assert os.path.exists(marker), "the kill never fired"
    assert result.attempts == 2
    rows = [tuple(json.loads(v)) for _, _, v in kafka.read_committed(out)]
    assert len(rows) >= N
    assert set(rows) == expected_sums(N)  # every sum there; the extra ones repeat some
