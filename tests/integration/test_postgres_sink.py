"""PostgresSink against a real PostgreSQL server: the writer's two-phase commit on its own,
then whole jobs on Spark."""

from __future__ import annotations

import psycopg
import pytest

from barrierflow.common import RestartStrategies
from barrierflow.connectors.interfaces.committables import Committable, Recovery, owner_of
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.base import CommitterContext, SinkWriterContext
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.connectors.postgres import PostgresSink, PostgresSinkError
from barrierflow.errors import ConfigurationError
from tests.jobs import odd_even
from tests.servers.postgres import postgres_server

INSERT = "INSERT INTO sums (k, v, total) VALUES (%s, %s, %s)"


@pytest.fixture
def db(postgres, request):
    conninfo = postgres.database(request.node.name.split("[")[0][-60:].lower())
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE sums (k int, v int PRIMARY KEY, total bigint)")
    return conninfo


def _rows(conninfo: str) -> list[tuple]:
    with psycopg.connect(conninfo) as conn:
        return conn.execute("SELECT k, v, total FROM sums ORDER BY v").fetchall()


def _prepared(conninfo: str) -> list[str]:
    with psycopg.connect(conninfo) as conn:
        return [
            g
            for (g,) in conn.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
            ).fetchall()
        ]


def _context(subtask: int = 0, attempt: int = 1, parallelism: int = 2) -> SinkWriterContext:
    return SinkWriterContext("job-id", "sums-job", "sink", subtask, parallelism, attempt)


def _commit(sink, committables: list[dict], checkpoint_id: int = 1, subtask: int = 0) -> None:
    """What the framework does when the checkpoint completes."""
    committer = sink.create_committer(CommitterContext("job-id", "sums-job", "sink", 0, 2, 1))
    committer.commit([Committable(checkpoint_id, subtask, c) for c in committables])
    committer.close()


# --- the writer on its own ---------------------------------------------------------------------


def test_prepared_records_stay_invisible_until_committed_and_a_second_commit_is_a_no_op(db):
    sink = PostgresSink(db, INSERT, batch_size=2)
    writer = sink.create_writer(_context())
    writer.write([(1, 1, 1), (0, 2, 2), (1, 3, 4)])
    committables = writer.prepare_commit(7)

    assert _rows(db) == []
    assert [c.gid for c in committables] == ["barrierflow:sums-job:sink:0:7:1"]
    assert committables[0].xid.isdigit()
    assert _prepared(db) == ["barrierflow:sums-job:sink:0:7:1"]
    _commit(sink, committables, 7)
    _commit(sink, committables, 7)
    assert _rows(db) == [(1, 1, 1), (0, 2, 2), (1, 3, 4)]
    assert _prepared(db) == []
    writer.close()


def test_recovery_commits_the_restored_transactions_and_rolls_back_the_others(db):
    sink = PostgresSink(db, INSERT)
    # Attempt 1, parallelism 3: checkpoint 4 completed (not yet committed), 5 prepared only.
    old = [sink.create_writer(_context(s, attempt=1, parallelism=3)) for s in range(3)]
    restored = []
    for s, w in enumerate(old):
        w.write([(s, 10 + s, 0)])
        restored += [Committable(4, s, c) for c in w.prepare_commit(4)]
        w.write([(s, 20 + s, 0)])
        w.prepare_commit(5)
        w.close()
    assert len(_prepared(db)) == 6

    # Attempt 2 at parallelism 2: each subtask commits the restored transactions it answers
    # for, then rolls back the others its share of the old subtasks left (as the framework).
    for s in range(2):
        committer = sink.create_committer(CommitterContext("job-id", "sums-job", "sink", s, 2, 2))
        committer.commit([c for c in restored if owner_of(c.subtask, 2) == s])
        committer.abort_lingering(Recovery(s, 2, 3, tuple(restored)))
        committer.close()

    assert [r[1] for r in _rows(db)] == [10, 11, 12]
    assert _prepared(db) == []


def test_seed_1039_a_job_ended_for_good_commits_what_completed_and_rolls_back_the_rest(db):
    sink = PostgresSink(db, INSERT)
    # The last attempt, parallelism 2: checkpoint 4 completed but its commit never came;
    # checkpoint 5 was prepared only. Then the job failed for good: no attempt follows.
    for s in range(2):
        writer = sink.create_writer(_context(s, attempt=3, parallelism=2))
        writer.write([(s, 10 + s, 0)])
        writer.prepare_commit(4)
        writer.write([(s, 20 + s, 0)])
        writer.prepare_commit(5)
        writer.close()
    assert len(_prepared(db)) == 4

    # The JobMaster's settlement, per subtask, without a writer (as cluster/sink_job_end.py).
    for s in range(2):
        committer = sink.create_committer(CommitterContext("job-id", "sums-job", "sink", s, 2, 0))
        committer.settle_at_job_end(Recovery(s, 2), 4)
        committer.settle_at_job_end(Recovery(s, 2), 4)  # idempotent
        committer.close()

    assert [r[1] for r in _rows(db)] == [10, 11]
    assert _prepared(db) == []


def test_a_savepoint_whose_transaction_a_recovery_rolled_back_fails_its_restore_naming_it(db):
    """A savepoint taken while the job runs commits nothing. If the job then fails over to an
    older checkpoint, that recovery rolls back what the savepoint prepared; a job started from
    the savepoint later must not count those rows as written."""
    sink = PostgresSink(db, INSERT)
    writer = sink.create_writer(_context(0, attempt=1, parallelism=1))
    writer.write([(0, 1, 1), (0, 2, 3)])
    savepoint = writer.prepare_commit(5)
    writer.close()
    # Attempt 2 restores no checkpoint (none completed): it rolls back what attempt 1 prepared.
    committer = sink.create_committer(CommitterContext("job-id", "sums-job", "sink", 0, 1, 2))
    committer.abort_lingering(Recovery(0, 1, 1, ()))
    committer.close()
    assert _prepared(db) == []

    with pytest.raises(PostgresSinkError, match=r"sink:0:5:1 .*was rolled back.*not in the table"):
        _commit(sink, savepoint, 5)
    assert _rows(db) == []


def test_a_lost_connection_is_retried_by_replaying_the_open_transaction(db):
    sink = PostgresSink(db, INSERT, batch_size=2, retry_backoff_ms=10)
    writer = sink.create_writer(_context())
    writer.write([(1, 1, 1), (0, 2, 2)])  # one batch written into the open transaction
    with psycopg.connect(db, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    assert killed, "no connection of the writer to terminate"
    writer.write([(1, 3, 4), (0, 4, 6)])
    _commit(sink, writer.prepare_commit(1))

    assert _rows(db) == [(1, 1, 1), (0, 2, 2), (1, 3, 4), (0, 4, 6)]
    writer.close()


def test_a_refused_record_is_named_in_the_error(db):
    writer = PostgresSink(db, INSERT, batch_size=10).create_writer(_context())
    writer.write([(1, 1, 1), (0, 2, 2), (1, "three", 4)])
    with pytest.raises(PostgresSinkError, match=r"record \(1, 'three', 4\).*InvalidTextRep"):
        writer.prepare_commit(1)
    writer.close()


def test_a_row_written_twice_is_named_with_how_a_replay_can_cause_it(db):
    """Seed 7050: a fallback to an older checkpoint writes again what a later one committed;
    with a plain INSERT the table's key refuses it, and the error says why it may happen."""
    sink = PostgresSink(db, INSERT, batch_size=10)
    writer = sink.create_writer(_context())
    writer.write([(1, 1, 1)])
    _commit(sink, writer.prepare_commit(1), 1)
    writer.write([(1, 1, 1)])
    with pytest.raises(PostgresSinkError, match=r"record \(1, 1, 1\).*UniqueViolation.*upsert"):
        writer.prepare_commit(2)
    writer.close()


def test_a_record_that_is_not_a_tuple_is_named_in_the_error(db):
    writer = PostgresSink(db, INSERT).create_writer(_context())
    with pytest.raises(PostgresSinkError, match=r"tuple of the parameters.*got \{'v': 1\}"):
        writer.write([{"v": 1}])
    writer.close()


def test_at_least_once_commits_at_the_barrier_and_an_upsert_makes_a_replay_harmless(db):
    upsert = INSERT + " ON CONFLICT (v) DO UPDATE SET total = EXCLUDED.total"
    sink = PostgresSink(db, upsert, DeliveryGuarantee.AT_LEAST_ONCE)
    writer = sink.create_writer(_context())
    writer.write([(1, 1, 1), (0, 2, 2)])
    assert writer.prepare_commit(1) == []
    writer.write([(0, 2, 2), (1, 3, 4)])  # a replay after a failure, and a new record
    writer.prepare_commit(2)

    assert _rows(db) == [(1, 1, 1), (0, 2, 2), (1, 3, 4)]
    assert _prepared(db) == []
    writer.close()


def test_bad_configuration_is_refused_with_what_to_change(postgres):
    with pytest.raises(ConfigurationError, match="placeholders"):
        PostgresSink(postgres.conninfo, "INSERT INTO t VALUES (1)")
    with pytest.raises(ConfigurationError, match="batch_size must be an integer >= 1"):
        PostgresSink(postgres.conninfo, INSERT, batch_size=0)
    with pytest.raises(ConfigurationError, match="not one of EXACTLY_ONCE"):
        PostgresSink(postgres.conninfo, INSERT, delivery_guarantee="twice")
    with pytest.raises(ConfigurationError, match="cannot connect to PostgreSQL"):
        PostgresSink("host=127.0.0.1 port=9 user=x connect_timeout=2", INSERT).check()


def test_a_server_without_prepared_transactions_is_refused_with_the_setting_to_change():
    with postgres_server(max_prepared_transactions=0) as server:
        sink = PostgresSink(server.conninfo, INSERT)
        with pytest.raises(ConfigurationError, match=r"max_prepared_transactions = 0.*Set max_"):
            sink.check()
        PostgresSink(server.conninfo, INSERT, DeliveryGuarantee.AT_LEAST_ONCE).check()


# --- whole jobs --------------------------------------------------------------------------------


@pytest.mark.spark
def test_a_job_writes_each_running_sum_once_and_leaves_no_prepared_transaction(spark, db, tmp_path):
    n = 3000
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, n, "", str(tmp_path / "ckpt"), interval_ms=100, delay_s=0.0003,
        sink=PostgresSink(db, INSERT, batch_size=100),
    )  # fmt: skip
    env.execute("sums-job")

    odd_even.check_exactly_once([list(r) for r in _rows(db)], n)
    assert _prepared(db) == []


@pytest.mark.spark
def test_a_job_with_a_bad_record_fails_naming_it(spark, db):
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.set_restart_strategy(RestartStrategies.no_restart())
    (
        env.from_source(NumberSequenceSource(1, 5), "numbers")
        .map(lambda x: (x, "five" if x == 5 else x, x))
        .sink_to(PostgresSink(db, INSERT, DeliveryGuarantee.AT_LEAST_ONCE))
    )
    with pytest.raises(Exception, match=r"record \(5, 'five', 5\)"):
        env.execute("bad-record")


def test_a_write_to_a_row_its_own_prepared_transaction_holds_waits_for_the_commit(db):
    # The prepared transaction of checkpoint 1 locks row v=1 until it commits; the writer
    # must not write to it (it would wait on itself) before the commit comes.
    upsert = INSERT + " ON CONFLICT (v) DO UPDATE SET total = EXCLUDED.total"
    sink = PostgresSink(db, upsert, batch_size=1)
    writer = sink.create_writer(_context())
    writer.write([(1, 1, 1)])
    first = writer.prepare_commit(1)
    writer.write([(1, 1, 10), (0, 2, 2)])  # more than a batch: buffered, not blocked
    _commit(sink, first)
    writer.notify_checkpoint_complete(1)
    _commit(sink, writer.prepare_commit(2), 2)

    assert _rows(db) == [(1, 1, 10), (0, 2, 2)]
    writer.close()
