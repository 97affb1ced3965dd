"""PostgresSink: rows written to PostgreSQL, exactly once by PostgreSQL's two-phase commit.

Per subtask, the records of one checkpoint interval go into one transaction. At the barrier
it is ``PREPARE TRANSACTION``'d under a global id that names the job, the operator, the
subtask, the checkpoint and the attempt (the committable); when the checkpoint completes it
is ``COMMIT PREPARED``. A prepared transaction survives the death of the subtask and of the
server, so a restored job commits what its checkpoint recorded and rolls back every other
prepared transaction this sink left. See docs/adr/0007-postgres-two-phase-commit.md.

AT_LEAST_ONCE commits at every barrier instead: after a failure, the records since the
restored checkpoint are written again, so make the statement an upsert
(``INSERT ... ON CONFLICT (key) DO UPDATE SET ...``) and replays are harmless. NONE commits
every batch as soon as it is written.

The writer (``writer.py``) and the committer (``committer.py``) each have a connection per
subtask: one for the open transaction, one for commits.

**I/O:** ``check`` connects, on the driver.
"""

from __future__ import annotations

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import (
    CommitterContext,
    JobSettings,
    Sink,
    SinkWriterContext,
)
from barrierflow.connectors.postgres.client import (
    check_prepared_transactions,
    connect,
    first_line,
    where,
)
from barrierflow.connectors.postgres.committable import (
    POSTGRES_COMMITTABLES,
    PostgresCommittableCodec,
)
from barrierflow.connectors.postgres.committer import PostgresCommitter
from barrierflow.connectors.postgres.writer import PostgresSinkWriter
from barrierflow.errors import ConfigurationError


class PostgresSink(Sink):
    """``sql``: an INSERT (or upsert) with ``%s`` placeholders; each record is a Row, tuple or
    list of its parameters. ``conninfo``: a libpq connection string or URI.
    ``commit_interval_ms`` (not with EXACTLY_ONCE): also commit when a record arrives this
    long after the last commit, so that rows show before the next checkpoint (JDBC's batch
    interval)."""

    def __init__(
        self,
        conninfo: str,
        sql: str,
        delivery_guarantee: DeliveryGuarantee | str = DeliveryGuarantee.EXACTLY_ONCE,
        batch_size: int = 1000,
        max_retries: int = 3,
        retry_backoff_ms: int = 100,
        commit_interval_ms: int = 0,
    ) -> None:
        if not isinstance(conninfo, str) or not conninfo.strip():
            raise ConfigurationError(f"PostgresSink needs a connection string, got {conninfo!r}")
        if not isinstance(sql, str) or "%s" not in sql:
            raise ConfigurationError(
                f"PostgresSink needs a statement with %s placeholders, got {sql!r}"
            )
        for name, value, least in (
            ("batch_size", batch_size, 1),
            ("max_retries", max_retries, 0),
            ("retry_backoff_ms", retry_backoff_ms, 0),
            ("commit_interval_ms", commit_interval_ms, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigurationError(
                    f"PostgresSink {name} must be an integer >= {least}, got {value!r}"
                )
        try:
            self.delivery_guarantee = DeliveryGuarantee.parse(delivery_guarantee, "PostgresSink")
        except ValueError as e:
            raise ConfigurationError(str(e)) from None
        if commit_interval_ms and self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            raise ConfigurationError(
                "PostgresSink with EXACTLY_ONCE commits only when a checkpoint completes; a "
                f"commit interval ({commit_interval_ms} ms) would break that: drop it, or use "
                "AT_LEAST_ONCE"
            )
        self.conninfo = conninfo
        self.sql = sql
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_backoff_ms = retry_backoff_ms
        self.commit_interval_ms = commit_interval_ms

    def check(self, job: JobSettings | None = None) -> None:
        """Before the job is submitted: the server is reachable and, for EXACTLY_ONCE, accepts
        prepared transactions. Raises ``ConfigurationError`` saying what to change."""
        psycopg = require("psycopg", "postgres", "PostgresSink")
        exactly_once = self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
        if exactly_once and job is not None and not job.checkpointing:
            raise ConfigurationError(
                "PostgresSink with EXACTLY_ONCE commits at checkpoints, but checkpointing is "
                "off (every record would wait in memory for the end of the input): enable it "
                "or use AT_LEAST_ONCE with an upsert statement"
            )
        try:
            with connect(psycopg, self.conninfo) as conn:
                if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
                    check_prepared_transactions(conn)
        except psycopg.OperationalError as e:
            raise ConfigurationError(
                f"PostgresSink cannot connect to {where(self.conninfo)}: {first_line(e)}"
            ) from None

    def create_writer(self, context: SinkWriterContext) -> PostgresSinkWriter:
        return PostgresSinkWriter(self, context)

    def create_committer(self, context: CommitterContext) -> PostgresCommitter:
        """Whatever the guarantee: a snapshot taken with EXACTLY_ONCE may be restored into a
        job that writes AT_LEAST_ONCE, and its prepared transactions must still settle."""
        return PostgresCommitter(self, context)

    def committable_codec(self) -> PostgresCommittableCodec:
        return POSTGRES_COMMITTABLES

    def __repr__(self) -> str:
        return (
            f"PostgresSink({where(self.conninfo)!r}, {self.sql!r}, {self.delivery_guarantee.name})"
        )
