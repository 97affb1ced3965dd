"""Kafka end to end under killed processes: a topic through the running sums into a Kafka
topic (read back read_committed) or PostgreSQL must hold exactly what a failure-free run
writes, record by record, with no transaction left open or prepared."""

from __future__ import annotations

import glob
import json
import os
import uuid

import psycopg
import pytest

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.postgres import PostgresSink
from tests.jobs import kafka_sums, odd_even
from tests.jobs.kill_before_commit import KillBeforeCommit

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000
INSERT = "INSERT INTO sums (k, v, total) VALUES (%s, %s, %s)"


@pytest.fixture(scope="module")
def numbers(kafka) -> str:
    """One partition, so that the order of values per key, and so the sums, are fixed."""
    topic = kafka.create_topic(f"numbers-{uuid.uuid4().hex[:8]}", 1)
    kafka.produce(topic, [str(i).encode() for i in range(1, N + 1)])
    return topic


def _kafka_output(kafka, name: str):
    topic = kafka.create_topic(f"sums-{name}-{uuid.uuid4().hex[:8]}", 2)
    sink = kafka_sums.kafka_sink(kafka.bootstrap_servers, topic, f"sums-{topic}")

    def rows() -> list[tuple]:
        return sorted(tuple(json.loads(v)) for _, _, v in kafka.read_committed(topic))

    return sink, rows, True


def _postgres_output(postgres, name: str):
    conninfo = postgres.database(f"kafka_{name}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE sums (k int, v int PRIMARY KEY, total bigint)")

    def rows() -> list[tuple]:
        with psycopg.connect(conninfo) as conn:
            prepared = conn.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
            ).fetchall()
            assert prepared == [], "prepared transactions left behind"
            return conn.execute("SELECT k, v, total FROM sums ORDER BY v").fetchall()

    return PostgresSink(conninfo, INSERT, batch_size=200), rows, False


def _run(kafka, postgres, numbers, tmp_path, output: str, name: str, fault: str | None, at=0):
    base = tmp_path / name
    if output == "kafka":
        sink, rows, as_json = _kafka_output(kafka, name)
    else:
        sink, rows, as_json = _postgres_output(postgres, name)
    throttle_fault = None
    if fault == "kill-before-commit":
        sink = KillBeforeCommit(sink, str(base / "fired"), after_commits=1)
    elif fault == "kill":
        throttle_fault = odd_even.Fault("kill", at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    kafka_sums.build(
        env, kafka.bootstrap_servers, numbers, sink, str(base / "ckpt"), throttle_fault,
        as_json=as_json,
    )  # fmt: skip
    result = env.execute(f"kafka-sums-{name}")
    if fault is not None:
        assert os.path.exists(base / "fired"), "the fault never fired"
        assert result.attempts == 2
    return sorted(tuple(r) for r in rows())


@pytest.fixture(scope="module")
def golden(spark, kafka, postgres, numbers, tmp_path_factory) -> list[tuple]:
    rows = _run(kafka, postgres, numbers, tmp_path_factory.mktemp("k"), "kafka", "golden", None)
    assert len(rows) == N
    odd_even.check_exactly_once([list(r) for r in rows], N)
    return rows


@pytest.mark.parametrize(
    ("output", "fault", "at"),
    [
        ("kafka", "kill", 2000),
        ("kafka", "kill", 5000),
        ("kafka", "kill-before-commit", 0),
        ("postgres", "kill", 3000),
        ("postgres", "kill-before-commit", 0),
    ],
    ids=[
        "to-kafka-kill-early",
        "to-kafka-kill-late",
        "to-kafka-kill-between-completion-and-commit",
        "to-postgres-kill",
        "to-postgres-kill-between-completion-and-commit",
    ],
)
def test_a_kill_leaves_the_output_equal_to_the_failure_free_run(
    spark, kafka, postgres, numbers, tmp_path, golden, output, fault, at
):
    name = f"{output}_{fault.replace('-', '_')}_{at}"
    rows = _run(kafka, postgres, numbers, tmp_path, output, name, fault, at)

    assert rows == golden  # record by record: key, value and the running sum


def test_the_source_restores_at_another_parallelism_from_a_retained_checkpoint(
    spark, kafka, tmp_path
):
    """A job reading 4 partitions at parallelism 2 fails for good mid-stream; its last
    checkpoint restores at parallelism 3: every value is summed exactly once overall.

    The fault fires at the first record after a checkpoint completed; the input lasts several
    seconds (about 5 s at 0.5 ms a record), so that a loaded machine, whose first checkpoint
    (through the Kafka sink's transaction) takes longer, still completes one mid-stream."""
    n = 20_000
    topic = kafka.create_topic(f"numbers4-{uuid.uuid4().hex[:8]}", 4)
    kafka.produce(topic, [str(i).encode() for i in range(1, n + 1)], lambda i: i % 4)
    out = kafka.create_topic(f"sums4-{uuid.uuid4().hex[:8]}", 2)
    sink = kafka_sums.kafka_sink(kafka.bootstrap_servers, out, f"rescale-{out}")
    ckpt = str(tmp_path / "ckpt")

    first = StreamExecutionEnvironment().set_parallelism(2)
    fault = odd_even.Fault("raise", 0, str(tmp_path / "fired"), ckpt)  # after a checkpoint
    kafka_sums.build(
        first, kafka.bootstrap_servers, topic, sink, ckpt, fault, 2, restarts=0, delay_s=0.0005
    )
    first.set_restart_strategy(RestartStrategies.no_restart())
    with pytest.raises(Exception, match="injected failure"):
        first.execute("rescaled")
    latest = max(glob.glob(f"{ckpt}/*/chk-*"), key=lambda p: int(p.rsplit("-", 1)[1]))

    second = StreamExecutionEnvironment().set_parallelism(3)
    kafka_sums.build(second, kafka.bootstrap_servers, topic, sink, str(tmp_path / "ckpt2"),
                     source_parallelism=3)  # fmt: skip
    second.set_restore_path(latest)
    second.execute("rescaled")

    rows = [json.loads(v) for _, _, v in kafka.read_committed(out)]
    odd_even.check_exactly_once(rows, n)
