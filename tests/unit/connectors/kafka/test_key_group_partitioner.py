"""A Kafka topic a job can read as a keyed stream: ``KeyGroupPartitioner`` writes each record to
a partition that the KafkaSource subtask owning its key's key group reads (the source's owner
rule inverted, for any partition count that is a multiple of the parallelism); KafkaSink takes
it through ``set_partitioner``, produces each record to its partition, and an exactly-once
transaction sent again after a lost commit keeps them."""

from __future__ import annotations

import json

import cloudpickle
import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.kafka import sink_committer, sink_writer
from barrierflow.connectors.kafka.batch_produce import partitioned_all, produce_all
from barrierflow.connectors.kafka.partition_assignment import owner, partition_for_key_group
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.kafka import (
    KafkaRecordSerializationSchema,
    KafkaSink,
    KeyGroupPartitioner,
)
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.key_group_range import subtask_for_key_group
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.testing.harness import OperatorHarness, operator
from tests.unit.connectors.kafka.fake_kafka import FakeBroker

MAX = 128


@pytest.mark.parametrize("parallelism", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("per_subtask", [1, 2, 3])
@pytest.mark.parametrize("topic", ["events", "orders-by-user"])
def test_the_partition_of_a_key_group_is_read_by_the_key_groups_owner(
    parallelism, per_subtask, topic
):
    partitions = parallelism * per_subtask
    used = set()
    for key_group in range(MAX):
        p = partition_for_key_group(topic, key_group, partitions, parallelism, MAX)
        assert 0 <= p < partitions
        assert owner(topic, p, parallelism) == subtask_for_key_group(MAX, parallelism, key_group)
        used.add(p)
    assert used == set(range(partitions))  # every partition has key groups


@pytest.mark.parametrize(("partitions", "parallelism"), [(3, 2), (1, 2), (6, 4)])
def test_a_partition_count_that_is_no_multiple_of_the_parallelism_is_refused(
    partitions, parallelism
):
    with pytest.raises(ValueError, match=f"needs a multiple of {parallelism}"):
        partition_for_key_group("t", 0, partitions, parallelism, MAX)


def test_the_partitioner_sends_each_record_to_its_key_groups_partition():
    partitioner = KeyGroupPartitioner(lambda r: r["user"], parallelism=2)
    for user in ("ann", "bob", "cy", 17, ("a", 1)):
        p = partitioner.partition({"user": user}, None, b"", "events", [0, 1, 2, 3])
        expected = subtask_for_key_group(MAX, 2, assign_to_key_group(user, MAX))
        assert owner("events", p, 2) == expected
        assert partitioner.partition_of_key(user, "events", 4) == p


def test_a_list_key_is_partitioned_as_key_by_keys_it():
    partitioner = KeyGroupPartitioner(lambda r: [r, "x"], parallelism=2)
    assert partitioner.partition(5, None, b"", "t", [0, 1]) == partitioner.partition_of_key(
        (5, "x"), "t", 2
    )


def test_the_partitioner_ships_without_its_cache():
    partitioner = KeyGroupPartitioner(str, parallelism=3, max_parallelism=12)
    partitioner.partition_of_key("k", "t", 3)
    copy = cloudpickle.loads(cloudpickle.dumps(partitioner))  # as a job ships it
    assert copy._key_groups is None
    assert copy.partition_of_key("k", "t", 3) == partitioner.partition_of_key("k", "t", 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, 0), "parallelism must be a positive int"),
        ((str, 0), "parallelism must be a positive int"),
        ((str, 4, 2), "parallelism 4 is above max_parallelism 2"),
    ],
)
def test_a_wrong_partitioner_is_refused(args, message):
    with pytest.raises((TypeError, ValueError), match=message if args[0] is str else "key"):
        KeyGroupPartitioner(*args)


def test_the_builder_takes_only_a_partitioner():
    builder = KafkaRecordSerializationSchema.builder().set_topic("t")
    with pytest.raises(TypeError, match="set_partitioner needs a KafkaPartitioner"):
        builder.set_partitioner(lambda r: 0)


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def produce(self, topic, value, key=None, partition=-1) -> None:
        self.sent.append((topic, value, partition))


def test_produce_all_sends_each_record_to_its_partition():
    producer = Producer()
    produce_all(producer, ["a", "b"], [(None, b"1"), (None, b"2")], [3, 0])
    assert producer.sent == [("a", b"1", 3), ("b", b"2", 0)]


def test_a_partitioner_that_fails_is_named_with_the_record():
    partitioner = KeyGroupPartitioner(lambda r: r["k"], parallelism=2)
    with pytest.raises(ValueError, match=r"KeyGroupPartitioner failed on record \{'x': 1\}"):
        partitioned_all(partitioner, [{"x": 1}], ["t"], [(None, b"")], lambda t: [0, 1])


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> FakeBroker:
    broker = FakeBroker(partition_count=4)
    for module in (sink_writer, sink_committer):
        monkeypatch.setattr(module, "require", lambda *_: broker.module())
    return broker


def test_an_exactly_once_sink_writes_each_record_to_its_partition_and_resends_them_so(broker):
    partitioner = KeyGroupPartitioner(lambda r: json.loads(r)[0], parallelism=2)
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .set_partitioner(partitioner)
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("p")
        .build()
    )
    h = OperatorHarness(operator(TransformationKind.SINK, sink, uid="sink"))
    values = [json.dumps([key, i]) for i, key in enumerate(["a", "b", "c", "d", "a"])]
    expected = [partitioner.partition_of_key(json.loads(v)[0], "out", 4) for v in values]
    h.process(values[:3])
    h.snapshot(1)
    broker.restart(forget=True)  # checkpoint 1's transaction is lost: sent again on commit
    h.notify_complete(1)
    h.process(values[3:])
    h.snapshot(2)
    h.notify_complete(2)
    h.close()
    assert broker.values() == [v.encode() for v in values]
    assert broker.visible_partitions == expected
    assert len(set(expected)) > 1
