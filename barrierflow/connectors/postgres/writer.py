"""PostgresSink's writer: the records of one checkpoint interval in one transaction, prepared
at the barrier (EXACTLY_ONCE) or committed there (AT_LEAST_ONCE; NONE: after each batch).

**Threading:** the task thread. **I/O:** one connection, for the open transaction.
**Lifecycle:** the records of the open transaction are kept in memory until the barrier, so
that a lost connection or a serialization failure is retried by replaying them into a new
transaction (up to ``max_retries`` times, with exponential backoff).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from barrierflow.common.types import Row
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import SinkWriter, SinkWriterContext
from barrierflow.connectors.postgres.client import (
    PostgresSinkError,
    check_prepared_transactions,
    connect,
    first_line,
    retryable,
    transaction_id_prefix,
    where,
)
from barrierflow.connectors.postgres.committable import PostgresCommittable
from barrierflow.errors import ConfigurationError

if TYPE_CHECKING:
    from barrierflow.connectors.postgres.sink import PostgresSink

log = logging.getLogger("barrierflow.connectors.postgres")


class PostgresSinkWriter(SinkWriter):
    def __init__(self, sink: PostgresSink, context: SinkWriterContext) -> None:
        self._psycopg = require("psycopg", "postgres", "PostgresSink")
        self._sink = sink
        self._guarantee = sink.delivery_guarantee
        self._subtask = context.subtask
        self._attempt = context.attempt
        self._prefix = transaction_id_prefix(context.job_name, context.operator_uid)
        self._conn: Any = None  # the open transaction's connection
        self._records: list[tuple] = []  # the open transaction's records (replayed on retry)
        self._written = 0  # how many of them the server has
        self._in_transaction = False
        self._preparing: str | None = None  # the global id of a PREPARE under way
        self._xid = ""  # the server's id of the transaction last prepared (pg_current_xact_id)
        self._prepared: dict[str, int] = {}  # prepared by this writer, not yet committed: id
        # -> checkpoint
        self._commit_interval_s = sink.commit_interval_ms / 1000
        self._next_commit = time.monotonic() + self._commit_interval_s
        self._connect_data()
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            try:
                check_prepared_transactions(self._conn)
            except ConfigurationError:
                self._close_data()
                raise

    # --- writing ------------------------------------------------------------------------------

    def write(self, records: list[Any]) -> None:
        records = [tuple(r) if isinstance(r, Row) else r for r in records]
        for record in records:
            if not isinstance(record, tuple | list):
                raise PostgresSinkError(
                    f"PostgresSink needs each record to be a tuple of the parameters of "
                    f"{self._sink.sql!r}, got {record!r:.200}"
                )
        self._records.extend(records)
        # Not while a prepared transaction of ours awaits its commit: it holds the locks of
        # the rows it wrote, and a write to one of them would wait for a commit that only
        # this thread can issue. Such writes wait (buffered) for the commit instead.
        if len(self._records) - self._written >= self._sink.batch_size and not self._prepared:
            self._flush()
        if self._commit_interval_s and time.monotonic() >= self._next_commit:
            self._flush()  # (the interval is refused with EXACTLY_ONCE)
            if self._in_transaction:
                self._commit()

    def prepare_commit(self, checkpoint_id: int) -> list[PostgresCommittable]:
        self._flush()
        if not self._in_transaction:
            return []
        if self._guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            self._commit()
            return []
        gid = f"{self._prefix}{self._subtask}:{checkpoint_id}:{self._attempt}"
        statement = self._psycopg.sql.SQL("PREPARE TRANSACTION {}").format(
            self._psycopg.sql.Literal(gid)
        )
        self._preparing = gid
        self._retrying("PREPARE TRANSACTION", lambda: self._prepare(statement), replay=True)
        self._preparing = None
        self._prepared[gid] = checkpoint_id
        self._end_transaction()
        return [PostgresCommittable(gid, self._xid)]

    def _commit(self) -> None:
        self._retrying("COMMIT", lambda: self._conn.execute("COMMIT"), replay=True)
        self._end_transaction()

    def _prepare(self, statement: Any) -> None:
        """Notes the transaction's id before preparing it: a committer that later finds the
        global id gone asks the server whether that transaction committed or was rolled back
        (``committer.py``)."""
        if self._in_transaction:
            (self._xid,) = self._conn.execute("SELECT pg_current_xact_id()::text").fetchone()
            self._conn.execute(statement)
        # else: a retry after a lost connection found the transaction already prepared

    def _flush(self) -> None:
        if self._written < len(self._records):
            self._retrying("write", self._write_pending, replay=True)

    def _write_pending(self) -> None:
        if self._written == len(self._records) and self._in_transaction:
            return  # replayed by a retry already
        if not self._in_transaction:
            self._conn.execute("BEGIN")
            self._in_transaction = True
        batch = self._records[self._written :]
        try:
            with self._conn.cursor() as cur:
                cur.executemany(self._sink.sql, batch)
        except self._psycopg.Error as e:
            if retryable(self._psycopg, e):
                raise
            raise self._bad_record_error(batch, e) from None
        self._written = len(self._records)

    def _end_transaction(self) -> None:
        self._next_commit = time.monotonic() + self._commit_interval_s
        self._records = []
        self._written = 0
        self._in_transaction = False

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Its prepared transactions up to ``checkpoint_id`` are committed: their rows' locks
        are free, and writes buffered meanwhile go on."""
        self._prepared = {g: c for g, c in self._prepared.items() if c > checkpoint_id}

    # --- retries ------------------------------------------------------------------------------

    def _retrying(self, what: str, action: Any, replay: bool) -> Any:
        """Runs ``action``; on a lost connection or a serialization failure reconnects, waits
        and (``replay``) writes the open transaction's records again first."""
        psycopg = self._psycopg
        delay_s = self._sink.retry_backoff_ms / 1000
        for retry in range(self._sink.max_retries + 1):
            try:
                if retry and replay:
                    self._reopen_transaction()
                return action()
            except psycopg.Error as e:
                if not retryable(psycopg, e) or retry == self._sink.max_retries:
                    raise PostgresSinkError(
                        f"PostgresSink: {what} failed after {retry} retries "
                        f"(statement {self._sink.sql!r}, {where(self._sink.conninfo)}): "
                        f"{type(e).__name__}: {first_line(e)}"
                    ) from e
                log.warning(
                    "PostgresSink subtask %d: %s failed (%s: %s); retry %d of %d in %.2f s",
                    self._subtask, what, type(e).__name__, first_line(e),
                    retry + 1, self._sink.max_retries, delay_s,
                )  # fmt: skip
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, 10.0)
        raise AssertionError("unreachable")

    def _reopen_transaction(self) -> None:
        """A new connection holding what the lost transaction held (or nothing, if the lost
        transaction was prepared before the connection dropped: it is then complete)."""
        self._close_data()
        self._connect_data()
        self._in_transaction = False
        self._written = 0
        if not self._records:
            return
        if (
            self._preparing is not None
            and self._conn.execute(
                "SELECT 1 FROM pg_prepared_xacts WHERE gid = %s", (self._preparing,)
            ).fetchone()
        ):
            return  # the PREPARE made it before the connection dropped
        self._write_pending()

    def _bad_record_error(self, batch: list[tuple], error: Exception) -> PostgresSinkError:
        """Finds the record the statement fails on, in a transaction rolled back afterwards."""
        psycopg = self._psycopg
        culprit = None
        try:
            self._close_data()  # drops the failed transaction and its locks before probing
            with connect(psycopg, self._sink.conninfo) as probe:
                probe.execute("BEGIN")
                probe.execute("SET LOCAL lock_timeout = '5s'")
                for record in batch:
                    probe.execute("SAVEPOINT probe")
                    try:
                        probe.execute(self._sink.sql, record)
                    except psycopg.Error:
                        culprit = record
                        break
                probe.execute("ROLLBACK")
        except psycopg.Error:
            pass  # the diagnosis is best effort; the original error is what matters
        which = f"record {culprit!r:.200}" if culprit is not None else f"a batch of {len(batch)}"
        hint = ""
        if isinstance(error, psycopg.errors.UniqueViolation):
            hint = (
                ". If it is a row written again after a restore of an older checkpoint than the "
                "job's latest (a fallback from a corrupt checkpoint, or a start from an older "
                "snapshot), its first write was committed; an upsert statement (INSERT ... ON "
                "CONFLICT ... DO UPDATE) makes such replays harmless"
            )
        return PostgresSinkError(
            f"PostgresSink: PostgreSQL refused {which} for statement {self._sink.sql!r}: "
            f"{type(error).__name__}: {first_line(error)}{hint}"
        )

    # --- connections --------------------------------------------------------------------------

    def _connect_data(self) -> None:
        self._conn = connect(self._psycopg, self._sink.conninfo)
        # A write that waits this long for a lock fails the task with the statement named,
        # rather than hanging it (our own prepared transactions never hold it: see write()).
        self._conn.execute("SET lock_timeout = '60s'")

    def _close_data(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Rolls back an open (never prepared) transaction by closing its connection."""
        self._close_data()
