"""KafkaSource and KafkaSink against a real Kafka-protocol broker, without Spark: splits,
positions and rescaling of the source; the sink's transactions, their recovery and fencing."""

from __future__ import annotations

import time
import uuid

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.interfaces.commit_retry import CommitRetryPolicy, commit_with_retries
from barrierflow.connectors.interfaces.committables import Committable, Recovery, owner_of
from barrierflow.connectors.kafka.partition_assignment import owner
from barrierflow.connectors.kafka.partition_split import KafkaPartitionSplit
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.base import (
    CommitterContext,
    JobSettings,
    SinkWriterContext,
    SourceReaderContext,
)
from barrierflow.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator

FAST_RETRY = CommitRetryPolicy(max_retries=3, initial_backoff_ms=10)
CHECKPOINTING = JobSettings(
    checkpointing=True, exactly_once=True, interval_ms=1000, timeout_ms=60_000
)


def _topic(kafka, partitions: int) -> str:
    return kafka.create_topic(f"t-{uuid.uuid4().hex[:12]}", partitions)


def _source(kafka, topic: str, bounded: bool = True, **properties) -> KafkaSource:
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_topics(topic)
        .set_group_id(f"g-{topic}")
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
    )
    if bounded:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    for k, v in properties.items():
        builder.set_property(k, v)
    return builder.build()


def _read_all(h, limit: int | None = None) -> list[str]:
    """What a source subtask (or a reader) reads, up to ``limit`` records or to its end."""
    out: list[str] = []
    while limit is None or len(out) < limit:
        batch = h.poll(limit - len(out) if limit else 100)
        if batch is None:
            break
        out += batch
    return out


def _partitions(h: OperatorHarness) -> list[int]:
    """The partitions a source subtask's reader was given and reads."""
    return sorted(s.partition for s in h.operator.reader.snapshot_state(0))


def _sink(kafka, topic: str, prefix: str, guarantee=DeliveryGuarantee.EXACTLY_ONCE) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(guarantee)
        .set_transactional_id_prefix(prefix)
        .build()
    )


def _writer(sink, subtask=0, parallelism=1, attempt=1, previous=None):
    context = SinkWriterContext("id", "job", "sink", subtask, parallelism, attempt, previous)
    return sink.create_writer(context)


def _committer(sink, writer=None, subtask=0, parallelism=1, attempt=1):
    context = CommitterContext("id", "job", "sink", subtask, parallelism, attempt, writer)
    return sink.create_committer(context)


def _committed(committables: list[dict], checkpoint_id: int = 1, subtask: int = 0):
    return [Committable(checkpoint_id, subtask, c) for c in committables]


def _recover(sink, restored: list[Committable], subtask=0, parallelism=1, attempt=2, previous=1):
    """What the framework does when a sink subtask of a restored job opens: its committer
    commits the committables it answers for, then cleans up what failed attempts left."""
    writer = _writer(sink, subtask, parallelism, attempt, previous)
    committer = _committer(sink, writer, subtask, parallelism, attempt)
    committer.commit([c for c in restored if owner_of(c.subtask, parallelism) == subtask])
    committer.abort_lingering(Recovery(subtask, parallelism, previous, tuple(restored)))
    return writer


def _values(kafka, topic: str) -> list[str]:
    return sorted(v.decode() for _, _, v in kafka.read_committed(topic))


# --- the source --------------------------------------------------------------------------------


def test_each_partition_is_read_by_one_subtask_and_a_rescaled_restore_resumes_every_offset(kafka):
    topic = _topic(kafka, 4)
    kafka.produce(topic, [str(i).encode() for i in range(200)], partition_of=lambda i: i % 4)
    spec = operator(TransformationKind.SOURCE, _source(kafka, topic), uid="src")

    # Two subtasks read 30 records each, then snapshot (a checkpoint).
    old = OperatorHarness.subtasks(spec, 2)
    first = [v for h in old for v in _read_all(h, 30)]
    assert sorted(p for h in old for p in _partitions(h)) == [0, 1, 2, 3]
    for s, h in enumerate(old):
        assert all(owner(topic, p, 2) == s for p in _partitions(h))
    states = [h.snapshot(1) for h in old]
    for h in old:
        h.close()

    # Restored at parallelism 3: every partition read on from its offset, by one subtask.
    rest = [v for h in OperatorHarness.rescaled(spec, states, 3) for v in _read_all(h)]
    assert sorted(first + rest, key=int) == [str(i) for i in range(200)]


def test_a_bounded_source_stops_at_the_offsets_of_its_start(kafka):
    topic = _topic(kafka, 1)
    kafka.produce(topic, [b"a", b"b"])
    (h,) = OperatorHarness.subtasks(operator(TransformationKind.SOURCE, _source(kafka, topic)), 1)
    kafka.produce(topic, [b"late"])  # after the stopping offsets were fixed
    assert _read_all(h) == ["a", "b"]
    h.close()


def test_new_partitions_are_discovered_and_read_from_their_start(kafka):
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = _topic(kafka, 1)
    source = _source(kafka, topic, bounded=False, **{"partition.discovery.interval.ms": 100})
    subtasks = OperatorHarness.subtasks(operator(TransformationKind.SOURCE, source), 2)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    kafka.produce(topic, [str(i).encode() for i in range(30)], partition_of=lambda i: i % 3)
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while len(seen) < 30 and time.monotonic() < deadline:
        subtasks[0].coordinators.run_periodic_work()  # discovery, when its interval passed
        for h in subtasks:
            seen += h.poll(100)
        time.sleep(0.05)
    assert sorted(seen, key=int) == [str(i) for i in range(30)]
    assert sorted(p for h in subtasks for p in _partitions(h)) == [0, 1, 2]
    for h in subtasks:
        h.close()


def test_a_malformed_message_is_named_with_its_partition_and_offset(kafka):
    topic = _topic(kafka, 1)
    kafka.produce(topic, [b"fine", b"\xff\xfe not utf-8"])
    reader = _source(kafka, topic).create_reader(SourceReaderContext("j", "s", 0, 1))
    reader.add_splits([KafkaPartitionSplit(topic, 0, 0, 2)])
    reader.notify_no_more_splits()
    with pytest.raises(ValueError, match=rf"topic {topic} partition 0 offset 1 .*not utf-8"):
        _read_all(reader)
    reader.close()


def test_the_reader_tells_its_lag_from_its_fetches_high_watermarks(kafka):
    topic = _topic(kafka, 1)
    kafka.produce(topic, [f"m{i}".encode() for i in range(100)])
    reader = _source(kafka, topic, bounded=False).create_reader(SourceReaderContext("j", "s", 0, 1))
    reader.add_splits([KafkaPartitionSplit(topic, 0, 0)])
    assert reader.backlog() is None  # no fetch has told a high watermark yet
    read = _read_all(reader, 30)
    backlog = reader.backlog()
    assert (backlog.label, backlog.pending, backlog.consumed) == (
        "Kafka lag",
        100 - len(read),
        len(read),
    )
    kafka.produce(topic, [b"more"] * 10)
    _read_all(reader, 100 - len(read) + 10)
    assert reader.backlog().pending == 0 and reader.backlog().consumed == 110
    reader.close()


def test_a_missing_topic_and_an_unreachable_broker_are_refused_before_the_job_starts(kafka):
    with pytest.raises(ConfigurationError, match="no-such-topic do not exist"):
        _source(kafka, "no-such-topic").check(CHECKPOINTING)
    with pytest.raises(ConfigurationError, match="topic no-such-topic does not exist"):
        _sink(kafka, "no-such-topic", "p").check(CHECKPOINTING)
    unreachable = _source(kafka, "t")
    unreachable.bootstrap_servers = "127.0.0.1:9"
    with pytest.raises(
        ConfigurationError, match=r"cannot reach the Kafka brokers at 127\.0\.0\.1:9"
    ):
        unreachable.check(CHECKPOINTING)


def test_a_transaction_timeout_shorter_than_a_checkpoint_may_take_is_refused(kafka):
    topic = _topic(kafka, 1)
    sink = _sink(kafka, topic, "p")
    sink.transaction_timeout_ms = 30_000
    with pytest.raises(ConfigurationError, match=r"transaction.timeout.ms = 30000 is shorter"):
        sink.check(CHECKPOINTING)


# --- the sink ----------------------------------------------------------------------------------


def test_records_are_invisible_until_their_checkpoint_commits_them(kafka):
    topic = _topic(kafka, 2)
    sink = _sink(kafka, topic, f"p-{topic}")
    writer = _writer(sink)
    committer = _committer(sink, writer)
    writer.write(["a", "b", "c"])
    committables = _committed(writer.prepare_commit(1))
    writer.write(["d"])  # the next checkpoint's transaction

    assert _values(kafka, topic) == []
    committer.commit(committables)
    assert _values(kafka, topic) == ["a", "b", "c"]
    committer.commit(_committed(writer.prepare_commit(2), 2))
    assert _values(kafka, topic) == ["a", "b", "c", "d"]
    writer.close()


def test_a_checkpointed_transaction_whose_writer_died_is_committed_once_by_recovery(kafka):
    topic = _topic(kafka, 2)
    sink = _sink(kafka, topic, f"p-{topic}")
    dead = _writer(sink)
    dead.write([f"r{i}" for i in range(50)])
    committables = _committed(dead.prepare_commit(1))  # checkpoint 1 completes; no commit
    dead.write(["never checkpointed"])  # an open transaction the next attempt must abort

    recovering = _recover(sink, committables)  # fences the dead writer, resends the records
    again = _recover(sink, committables, attempt=3)  # a second failover: committed, sends nothing

    assert _values(kafka, topic) == sorted(f"r{i}" for i in range(50))
    with pytest.raises(Exception, match=r"(?i)fenced"):
        _committer(sink, dead).commit(committables + _committed(dead.prepare_commit(2), 2))
    recovering.close()
    again.close()


def test_recovery_commits_a_transaction_that_was_committed_before_the_failure_only_once(kafka):
    topic = _topic(kafka, 1)
    sink = _sink(kafka, topic, f"p-{topic}")
    writer = _writer(sink)
    writer.write(["x", "y"])
    committables = _committed(writer.prepare_commit(1))
    _committer(sink, writer).commit(committables)
    writer.close()

    _recover(sink, committables).close()
    assert _values(kafka, topic) == ["x", "y"]


def test_seed_20261125000_a_transaction_pending_across_a_broker_restart_is_committed_once(kafka):
    """Kafka keeps a pre-committed transaction across a restart, and the commit makes it
    visible; the test broker forgets it and acknowledges the commit: the commit's check of the
    commit group sees it lost, and the retry sends its records again."""
    if kafka.process is None:
        pytest.skip("only a broker the tests started can be restarted")
    topic = _topic(kafka, 2)
    sink = _sink(kafka, topic, f"p-{topic}").with_commit_retry(FAST_RETRY)
    writer = _writer(sink)
    committer = _committer(sink, writer)
    writer.write(["a", "b", "c"])
    committables = _committed(writer.prepare_commit(1))
    kafka.restart(down_s=0.5)

    commit_with_retries(
        lambda: committer.commit(committables), sink.commit_retry, "sink", "commit", time.sleep
    )
    writer.write(["d"])
    committer.commit(_committed(writer.prepare_commit(2), 2))
    assert _values(kafka, topic) == ["a", "b", "c", "d"]
    writer.close()


def test_seed_20261125000_a_transaction_open_across_a_broker_restart_is_not_pre_committed(kafka):
    """The test broker loses an open transaction's records in a restart and still commits the
    group offset sent after it: the outage librdkafka reports keeps the transaction from being
    pre-committed (the task fails over, and replays it)."""
    if kafka.process is None:
        pytest.skip("only a broker the tests started can be restarted")
    topic = _topic(kafka, 2)
    sink = _sink(kafka, topic, f"p-{topic}")
    writer = _writer(sink)
    writer.write(["a"])
    kafka.restart(down_s=0.5)
    with pytest.raises(RuntimeError, match="every Kafka broker was unreachable"):
        writer.write(["b"])  # refused here once the outage was told (seed 5027)
        writer.prepare_commit(1)
    writer.close()
    assert _values(kafka, topic) == []


def test_seed_5027_a_write_after_a_broker_restart_holds_back_no_later_commit(kafka):
    """A record the test broker takes into the transaction it forgot in a restart is never
    ended, not by an abort nor by a fence: read_committed readers of its partition stop before
    it for good, and miss every later commit. The sink sends nothing after the outage."""
    if kafka.process is None:
        pytest.skip("only a broker the tests started can be restarted")
    topic = _topic(kafka, 1)
    sink = _sink(kafka, topic, f"p-{topic}").with_commit_retry(FAST_RETRY)
    writer = _writer(sink)
    writer.write(["a"])
    writer._slots[writer._current.slot].producer.flush(10)
    kafka.restart(down_s=0.5)
    with pytest.raises(RuntimeError, match="every Kafka broker was unreachable"):
        writer.write(["b"])
    writer.close()
    recovered = _recover(sink, [])
    recovered.write(["c"])
    _committer(sink, recovered, attempt=2).commit(_committed(recovered.prepare_commit(2), 2))
    recovered.close()
    assert kafka.held_back(topic) == []
    assert _values(kafka, topic) == ["c"]


def test_a_rescaled_recovery_aborts_what_the_old_subtasks_left_open(kafka):
    topic = _topic(kafka, 1)
    sink = _sink(kafka, topic, f"p-{topic}")
    old = [_writer(sink, s, parallelism=3) for s in range(3)]
    committables = []
    for s, w in enumerate(old):
        w.write([f"done-{s}"])
        committables += _committed(w.prepare_commit(1), subtask=s)
        w.write([f"open-{s}"])  # never checkpointed: must never become visible

    for w in old:
        w._slots[w._current.slot].producer.flush(10)  # the open records reached the broker
    for s in range(2):  # one after the other: no subtask's recovery waits for another's
        _recover(sink, committables, subtask=s, parallelism=2, previous=3).close()

    # The open transactions were aborted: reading to the end does not wait for them.
    assert _values(kafka, topic) == ["done-0", "done-1", "done-2"]


def test_at_least_once_delivers_at_the_barrier_off_the_task_thread(kafka):
    topic = _topic(kafka, 1)
    writer = _writer(_sink(kafka, topic, "p", DeliveryGuarantee.AT_LEAST_ONCE))
    writer.write(["a", "b"])
    assert writer.prepare_commit(1) == []
    writer.flushing(1).result(30)  # what the checkpoint's acknowledgement waits for
    assert _values(kafka, topic) == ["a", "b"]
    writer.close()


def test_a_topic_selector_routes_each_record_to_the_topic_it_returns(kafka):
    topics = {key: _topic(kafka, 1) for key in ("a", "b")}
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers(kafka.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic_selector(lambda record: topics[record[0]])
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    sink.check(CHECKPOINTING)  # the brokers answer; the topics are the selector's
    writer = _writer(sink)
    writer.write(["a1", "b1", "a2"])
    assert writer.prepare_commit(1) == []
    writer.flushing(1).result(30)
    assert _values(kafka, topics["a"]) == ["a1", "a2"]
    assert _values(kafka, topics["b"]) == ["b1"]
    writer.close()


def test_a_record_the_serializer_refuses_is_named(kafka):
    topic = _topic(kafka, 1)
    writer = _writer(_sink(kafka, topic, f"p-{topic}"))
    with pytest.raises(ValueError, match=r"cannot serialize record 42: SimpleStringSchema"):
        writer.write(["fine", 42])
    writer.close()


# --- the example -------------------------------------------------------------------------------


@pytest.mark.spark
def test_the_kafka_to_postgres_example_upserts_each_pages_count(spark, kafka, postgres, tmp_path):
    import json
    import random

    import cloudpickle
    import psycopg

    from examples import kafka_to_postgres

    cloudpickle.register_pickle_by_value(kafka_to_postgres)  # examples/ is not installed
    topic = _topic(kafka, 3)
    rng = random.Random(7)
    pages = [rng.choice(["/", "/a", "/b", "/c"]) for _ in range(3000)]
    events = [json.dumps({"page": p, "user": f"u{i}"}).encode() for i, p in enumerate(pages)]
    kafka.produce(topic, events, partition_of=lambda i: i % 3)
    conninfo = postgres.database("page_views")
    kafka_to_postgres.create_table(conninfo)
    env = StreamExecutionEnvironment().set_parallelism(2)
    kafka_to_postgres.build(env, kafka.bootstrap_servers, topic, conninfo, str(tmp_path / "c"))
    env.execute("page-views")

    with psycopg.connect(conninfo) as conn:
        rows = dict(conn.execute("SELECT page, views FROM page_views").fetchall())
    assert rows == {p: pages.count(p) for p in set(pages)}
