"""The campaign's jobs: per job, how the program builds it (from ``tests/jobs``), its input, the
servers it needs, and its committed output as a sorted list of records, so that a run and the
failure-free reference compare record by record.

**I/O:** inputs written (files, Kafka topics, PostgreSQL tables) and outputs read back.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from barrierflow.datastream import StreamExecutionEnvironment
from chaos_jobs.spec import JobSpec
from tests.jobs import (
    backpressured,
    broadcast_rules,
    event_time,
    files_to_parquet,
    kafka_sums,
    odd_even,
)

Record = tuple[Any, ...]
INSERT = "INSERT INTO sums (k, v, total) VALUES (%s, %s, %s)"
UNALIGNED = {"execution.checkpointing.unaligned.enabled": True}


@dataclass(frozen=True)
class Servers:
    """The servers a campaign slice started (None: not needed by its runs)."""

    kafka: Any = None  # tests.servers.kafka.KafkaBroker
    postgres: Any = None  # tests.servers.postgres.PostgresServer
    s3: Any = None  # tests.servers.s3.S3Server


@dataclass(frozen=True)
class Job:
    name: str
    n: int  # input records: a failure-free run lasts a few seconds after its first checkpoint
    build: Callable[[StreamExecutionEnvironment, JobSpec], None]
    committed: Callable[[JobSpec, Servers], list[Record]]
    servers: frozenset[str] = frozenset()  # "kafka", "postgres"
    poison: bool = True  # a record can be made to raise in a user function
    # what the broker holds back behind a transaction it never ended, and where
    held_back: Callable[[JobSpec, Servers], tuple[list[Record], str]] | None = None

    def prepare(self, spec: JobSpec, servers: Servers, malformed_at: int | None) -> JobSpec:
        """Writes the run's input; returns the spec with what it made (topics, database)."""
        if self.name == "files_to_parquet":
            files_to_parquet.write_input(os.path.join(spec.base, "in"), spec.n)
        changes: dict[str, Any] = {}
        if "kafka" in self.servers:
            changes.update(_kafka_topics(servers.kafka, spec.n, malformed_at))
            changes["kafka"] = servers.kafka.bootstrap_servers
        if "postgres" in self.servers:
            changes["postgres"] = _database(servers.postgres)
        return JobSpec(**{**spec.__dict__, **changes})


def _fault(spec: JobSpec) -> odd_even.Fault | None:
    if spec.poison is None:
        return None
    return odd_even.Fault("poison", spec.poison, "", "")


def _out(spec: JobSpec) -> str:
    return os.path.join(spec.base, "out")


# --- builders (in the job program) ---------------------------------------------------------


def _build_keyed_count(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    odd_even.build(
        env, spec.n, _out(spec), spec.checkpoint_dir, 100, spec.delay_s, _fault(spec),
        source_parallelism=1, num_retained=2, state_backend=spec.backend,
    )  # fmt: skip


def _build_windows(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    event_time.build(
        env, "window", spec.n, _out(spec), spec.checkpoint_dir, _fault(spec), spec.backend,
        spec.delay_s, spec.restarts,
    )  # fmt: skip


def _build_broadcast(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    broadcast_rules.build(
        env, spec.n, _out(spec), spec.checkpoint_dir, _fault(spec), spec.backend, spec.delay_s,
        spec.restarts,
    )  # fmt: skip


def _build_unaligned(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    conf = {**UNALIGNED, "state.backend.type": spec.backend}
    logs = os.path.join(spec.base, "logs")
    backpressured.build(env, spec.n, _out(spec), spec.checkpoint_dir, logs, conf)


def _build_kafka(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    if spec.postgres is not None:
        from barrierflow.datastream.connectors.postgres import PostgresSink

        sink: Any = PostgresSink(spec.postgres, INSERT, batch_size=200)
    else:
        sink = kafka_sums.kafka_sink(spec.kafka, spec.out_topic, f"chaos-{spec.out_topic}")
    env.configure({"state.backend.type": spec.backend})
    kafka_sums.build(
        env, spec.kafka, spec.in_topic, sink, spec.checkpoint_dir, _fault(spec), 1,
        spec.restarts, as_json=spec.postgres is None, delay_s=spec.delay_s,
        deserializer=kafka_sums.NumberSchema(),
    )  # fmt: skip


def _build_files_to_parquet(env: StreamExecutionEnvironment, spec: JobSpec) -> None:
    files_to_parquet.build(
        env, os.path.join(spec.base, "in"), _out(spec), spec.checkpoint_dir, _fault(spec),
        spec.backend, spec.delay_s, spec.restarts,
    )  # fmt: skip


# --- committed output (in the runner) ------------------------------------------------------


def _sorted(records: list) -> list[Record]:
    return sorted(tuple(r) for r in records)


def _committed_files(spec: JobSpec, servers: Servers) -> list[Record]:
    return _sorted(odd_even.read_committed(_out(spec)))


def _committed_broadcast(spec: JobSpec, servers: Servers) -> list[Record]:
    return _sorted(
        [(name, *r) for name in ("judged", "unknown")
         for r in odd_even.read_committed(os.path.join(_out(spec), name))]
    )  # fmt: skip


def _committed_kafka(spec: JobSpec, servers: Servers) -> list[Record]:
    return _sorted(json.loads(v) for _, _, v in servers.kafka.read_committed(spec.out_topic))


def _held_back_kafka(spec: JobSpec, servers: Servers) -> tuple[list[Record], str]:
    found = servers.kafka.held_back(spec.out_topic)
    where = ", ".join(
        f"partition {h.partition} at offset {h.stable_end} of {h.high_watermark}" for h in found
    )
    return [tuple(json.loads(v)) for h in found for v in h.values], where


def _committed_postgres(spec: JobSpec, servers: Servers) -> list[Record]:
    """The table's rows; a prepared transaction left behind is a failure of its own."""
    import psycopg

    with psycopg.connect(spec.postgres) as conn:
        prepared = conn.execute(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
        ).fetchall()
        if prepared:
            raise AssertionError(f"prepared transactions left behind: {prepared}")
        return _sorted(conn.execute("SELECT k, v, total FROM sums").fetchall())


def _committed_parquet(spec: JobSpec, servers: Servers) -> list[Record]:
    return _sorted(files_to_parquet.read_committed(_out(spec)))


def _kafka_topics(broker: Any, n: int, malformed_at: int | None) -> dict[str, str]:
    """One input partition, so that each key's values come in one order: the sums are fixed.
    ``malformed_at``: the message at that index is not a number."""
    tag = uuid.uuid4().hex[:8]
    in_topic = broker.create_topic(f"chaos-in-{tag}", 1)
    values = [str(i).encode() for i in range(1, n + 1)]
    if malformed_at is not None:
        values.insert(malformed_at, b"\x00not a number")
    broker.produce(in_topic, values)
    return {"in_topic": in_topic, "out_topic": broker.create_topic(f"chaos-out-{tag}", 2)}


def _database(server: Any) -> str:
    import psycopg

    conninfo = server.database(f"chaos_{uuid.uuid4().hex[:12]}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE sums (k int, v int PRIMARY KEY, total bigint)")
    return conninfo


JOBS: dict[str, Job] = {
    job.name: job
    for job in (
        Job("keyed_count", 8_000, _build_keyed_count, _committed_files),
        Job("windows", 8_000, _build_windows, _committed_files),
        Job("broadcast", 8_000, _build_broadcast, _committed_broadcast),
        Job("unaligned", 20_000, _build_unaligned, _committed_files, poison=False),
        Job(
            "kafka_to_kafka",
            6_000,
            _build_kafka,
            _committed_kafka,
            frozenset({"kafka"}),
            held_back=_held_back_kafka,
        ),
        Job(
            "kafka_to_postgres",
            6_000,
            _build_kafka,
            _committed_postgres,
            frozenset({"kafka", "postgres"}),
        ),
        Job("files_to_parquet", 8_000, _build_files_to_parquet, _committed_parquet),
    )
}
