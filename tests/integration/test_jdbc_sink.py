"""JdbcSink (PyFlink's ``connectors.jdbc``) against a real PostgreSQL server: at least once
with an upsert and a batch interval, on its own; exactly once as a whole job on Spark whose
task fails mid-stream, committing what a failure-free run commits."""

from __future__ import annotations

import time

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from barrierflow.common import Types
from barrierflow.common.types import Row
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import SinkWriterContext
from barrierflow.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from tests.jobs import odd_even
from tests.jobs.odd_even import Fault

ROW = Types.ROW([Types.INT(), Types.INT(), Types.LONG()])
UPSERT = (
    "INSERT INTO sums (k, v, total) VALUES (?, ?, ?) "
    "ON CONFLICT (v) DO UPDATE SET total = EXCLUDED.total"
)


@pytest.fixture
def db(postgres, request):
    conninfo = postgres.database(request.node.name[-60:].lower())
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE sums (k int, v int PRIMARY KEY, total bigint)")
    return conninfo


def connection_options(conninfo: str) -> JdbcConnectionOptions:
    info = conninfo_to_dict(conninfo)
    builder = (
        JdbcConnectionOptions.JdbcConnectionOptionsBuilder()
        .with_url(f"jdbc:postgresql://{info['host']}:{info['port']}/{info['dbname']}")
        .with_driver_name("org.postgresql.Driver")
        .with_user_name(info["user"])
    )
    if info.get("password"):
        builder.with_password(info["password"])
    return builder.build()


def rows(conninfo: str) -> list[tuple]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT k, v, total FROM sums ORDER BY v").fetchall()


def writer_of(sink: JdbcSink, attempt: int = 1):
    context = SinkWriterContext("job-id", "jdbc-job", "sink", 0, 1, attempt)
    return sink.wrapped_sink.create_writer(context)


def test_at_least_once_commits_at_the_barrier_and_a_replay_upserts(db):
    sink = JdbcSink.sink(UPSERT, ROW, connection_options(db))
    writer = writer_of(sink)
    writer.write([Row(1, 1, 1), Row(0, 2, 2)])
    assert rows(db) == []
    assert writer.prepare_commit(1) == []
    assert rows(db) == [(1, 1, 1), (0, 2, 2)]
    writer.close()
    replay = writer_of(sink, attempt=2)  # a restored attempt writes the records again
    replay.write([Row(0, 2, 2), Row(1, 3, 4)])
    replay.prepare_commit(2)
    replay.close()
    assert rows(db) == [(1, 1, 1), (0, 2, 2), (1, 3, 4)]


def test_the_batch_interval_commits_before_the_next_checkpoint(db):
    options = JdbcExecutionOptions.builder().with_batch_interval_ms(1).with_batch_size(10).build()
    writer = writer_of(JdbcSink.sink(UPSERT, ROW, connection_options(db), options))
    writer.write([Row(1, 1, 1)])
    time.sleep(0.01)  # the interval passes: the next record commits what came before
    writer.write([Row(0, 2, 2)])
    assert rows(db) == [(1, 1, 1), (0, 2, 2)]
    writer.close()


def test_a_record_postgresql_refuses_is_named(db):
    writer = writer_of(JdbcSink.sink(UPSERT, ROW, connection_options(db)))
    with pytest.raises(Exception, match=r"record \(1, 1, 'x'\)"):
        writer.write([Row(1, 1, "x")])
        writer.prepare_commit(1)
    writer.close()


@pytest.mark.spark
def test_exactly_once_sink_commits_each_running_sum_once_despite_a_failure(spark, db, tmp_path):
    n = 10_000  # as the fault suite: checkpoints complete before the fault at n / 2
    insert = "INSERT INTO sums (k, v, total) VALUES (?, ?, ?)"  # a replay would violate the key
    env = StreamExecutionEnvironment().set_parallelism(2)
    fault = Fault("raise", n // 2, str(tmp_path / "fired"), str(tmp_path / "ckpt"))
    odd_even.build(
        env, n, "", str(tmp_path / "ckpt"), interval_ms=100, delay_s=0.0003, fault=fault,
        sink=JdbcSink.exactly_once_sink(insert, ROW, connection_options(db)),
    )  # fmt: skip
    result = env.execute("jdbc-job")

    assert (tmp_path / "fired").exists(), "the fault did not fire"
    assert result is not None
    odd_even.check_exactly_once([list(r) for r in rows(db)], n)
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)
