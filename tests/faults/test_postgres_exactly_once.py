"""Killed processes around PostgreSQL's two-phase commit: the table must hold exactly what a
failure-free run writes, record by record, and no prepared transaction may be left behind."""

from __future__ import annotations

import os

import psycopg
import pytest

from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.datastream.connectors import DeliveryGuarantee
from barrierflow.datastream.connectors.postgres import PostgresSink
from tests.jobs import odd_even
from tests.jobs.kill_before_commit import KillBeforeCommit

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000
INSERT = "INSERT INTO sums (k, v, total) VALUES (%s, %s, %s)"
UPSERT = INSERT + " ON CONFLICT (v) DO UPDATE SET k = EXCLUDED.k, total = EXCLUDED.total"


def _database(postgres, name: str) -> str:
    conninfo = postgres.database(name)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE sums (k int, v int PRIMARY KEY, total bigint)")
    return conninfo


def _run(postgres, tmp_path, name: str, fault: str | None, at_value: int = 0, **sink_args):
    """``fault``: None, "kill" (mid-stream, at a value) or "kill-before-commit"."""
    base = tmp_path / name
    conninfo = _database(postgres, name)
    sink = PostgresSink(conninfo, sink_args.pop("sql", INSERT), batch_size=200, **sink_args)
    if fault == "kill-before-commit":
        sink = KillBeforeCommit(sink, str(base / "fired"), after_commits=1)
    throttle_fault = None
    if fault == "kill":
        throttle_fault = odd_even.Fault("kill", at_value, str(base / "fired"), str(base / "ckpt"))
    mode = (
        CheckpointingMode.AT_LEAST_ONCE
        if sink_args.get("delivery_guarantee") is DeliveryGuarantee.AT_LEAST_ONCE
        else CheckpointingMode.EXACTLY_ONCE
    )
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, "", str(base / "ckpt"), interval_ms=100, delay_s=0.0003,
        fault=throttle_fault, source_parallelism=1, mode=mode, sink=sink,
    )  # fmt: skip
    result = env.execute(f"sums-{name}")
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT k, v, total FROM sums ORDER BY v").fetchall()
        prepared = conn.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
        ).fetchall()
    if fault is not None:
        assert os.path.exists(base / "fired"), "the fault never fired"
        assert result.attempts == 2
    return rows, prepared


@pytest.fixture(scope="module")
def golden(spark, postgres, tmp_path_factory) -> list[tuple]:
    rows, prepared = _run(postgres, tmp_path_factory.mktemp("pg"), "golden", None)
    assert len(rows) == N and prepared == []
    return rows


@pytest.mark.parametrize(
    ("fault", "at_value"),
    [("kill", 1500), ("kill", 4500), ("kill-before-commit", 0)],
    ids=["kill-early", "kill-late", "kill-between-completion-and-commit"],
)
def test_a_kill_leaves_the_table_equal_to_the_failure_free_run(
    spark, postgres, tmp_path, golden, fault, at_value
):
    rows, prepared = _run(
        postgres, tmp_path, fault.replace("-", "_") + str(at_value), fault, at_value
    )

    assert prepared == [], "prepared transactions left behind"
    assert rows == golden  # record by record: key, value and the running sum


def test_at_least_once_with_an_upsert_loses_nothing_after_a_kill(spark, postgres, tmp_path, golden):
    rows, prepared = _run(
        postgres, tmp_path, "alo", "kill", 3000,
        sql=UPSERT, delivery_guarantee=DeliveryGuarantee.AT_LEAST_ONCE,
    )  # fmt: skip

    assert prepared == []
    assert [r[1] for r in rows] == list(range(1, N + 1))  # replays were upserts
    assert rows == golden  # the replayed sums are recomputed from restored state: the same
