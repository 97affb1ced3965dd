"""KafkaSink's exactly-once commit against a broker that loses a transaction it acknowledged
(``fake_kafka.FakeBroker.restart(forget=True)``, as the test broker does across a restart):
the sink must not count such a commit done, and must send its records again."""

from __future__ import annotations

import json

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.interfaces.commit_retry import CommitRetryPolicy
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.kafka import sink_committer, sink_writer
from barrierflow.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.testing.harness import OperatorHarness, operator
from tests.unit.connectors.kafka.fake_kafka import FakeBroker

FAST = CommitRetryPolicy(max_retries=2, initial_backoff_ms=0)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> FakeBroker:
    broker = FakeBroker()
    for module in (sink_writer, sink_committer):
        monkeypatch.setattr(module, "require", lambda *_: broker.module())
    return broker


def kafka_sink() -> KafkaSink:
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix("sums")
        .build()
    )
    return sink.with_commit_retry(FAST)


def harness() -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.SINK, kafka_sink(), uid="sink"))


def records(*values: int) -> list[str]:
    return [json.dumps(v) for v in values]


def test_seed_20261125000_a_commit_the_restarted_broker_forgot_is_sent_again(broker):
    h = harness()
    h.process(records(1, 2))
    h.snapshot(1)
    broker.restart(forget=True)  # the pre-committed transaction of checkpoint 1 is gone
    h.notify_complete(1)  # the broker acknowledges its commit, and commits nothing
    assert broker.values() == [b"1", b"2"]
    h.process(records(3))
    h.snapshot(2)
    h.notify_complete(2)
    assert broker.values() == [b"1", b"2", b"3"]
    h.close()


def test_seed_20261125000_a_transaction_open_across_the_restart_fails_over_and_is_replayed(
    broker,
):
    """The broker forgets the open transaction's records, then commits the group offset sent
    after the restart: no check of the offset can tell, so the outage librdkafka reported
    keeps it from being pre-committed, and the failover replays its records."""
    h = harness()
    h.process(records(1))
    state = h.snapshot(1)
    h.notify_complete(1)
    h.process(records(2, 3))
    broker.restart(forget=True)
    with pytest.raises(RuntimeError, match="every Kafka broker was unreachable"):
        h.snapshot(2)
    h.close()
    recovered = h.restored(state)
    recovered.process(records(2, 3))  # the source replays what followed checkpoint 1
    recovered.snapshot(3)
    recovered.notify_complete(3)
    recovered.close()
    assert broker.values() == [b"1", b"2", b"3"]


def test_seed_5027_no_record_joins_a_transaction_after_the_brokers_were_all_unreachable(broker):
    """A record the restarted broker takes into the transaction it forgot is never ended: no
    fence or abort writes its marker, and read_committed readers stop before it for good, so
    that the recovered attempt's commits are lost to them too. The first write after the
    outage fails the task instead, and sends nothing."""
    h = harness()
    h.process(records(1))
    state = h.snapshot(1)
    h.notify_complete(1)
    h.process(records(2))
    broker.restart(forget=True)
    with pytest.raises(UserFunctionError, match="every Kafka broker was unreachable"):
        h.process(records(3))
    h.close()
    recovered = h.restored(state)
    recovered.process(records(2, 3))
    recovered.snapshot(3)
    recovered.notify_complete(3)
    recovered.close()
    assert broker.stable_end is None
    assert broker.values() == [b"1", b"2", b"3"]


def test_seed_20261125000_a_restore_does_not_take_a_lost_commit_for_a_done_one(broker):
    """The proof a restore uses (the commit group's offset at or past the committable's
    number) holds only if no lost transaction was ever counted committed: a later one of the
    same id would carry the offset past it."""
    h = harness()
    h.process(records(1))
    h.snapshot(1)
    broker.restart(forget=True)
    h.notify_complete(1)
    h.process(records(2))
    state = h.snapshot(2)
    h.notify_complete(2)
    h.close()
    h.restored(state).close()
    assert sorted(broker.values()) == [b"1", b"2"]


def test_a_broker_that_keeps_its_transactions_across_a_restart_commits_them_once(broker):
    h = harness()
    h.process(records(1, 2))
    h.snapshot(1)
    broker.restart(forget=False)
    h.notify_complete(1)
    h.close()
    assert broker.values() == [b"1", b"2"]
