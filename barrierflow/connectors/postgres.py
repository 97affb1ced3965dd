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

**Threading:** a writer is used by its subtask's task thread only.
**I/O:** two connections per subtask: one for the open transaction, one for commits.
**Lifecycle:** the records of the open transaction are kept in memory until the barrier, so
that a lost connection or a serialization failure is retried by replaying them into a new
transaction (up to ``max_retries`` times, with exponential backoff).
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.optional_dependency import require
from barrierflow.connectors.sink import JobSettings, SinkWriter, SinkWriterContext
from barrierflow.errors import ConfigurationError

log = logging.getLogger("barrierflow.connectors.postgres")

_MAX_GID_BYTES = 200  # PostgreSQL's limit on a prepared transaction's global id


class PostgresSinkError(RuntimeError):
    """A statement PostgreSQL refused, or retries that ran out; names the record."""


class PostgresSink:
    """``sql``: an INSERT (or upsert) with ``%s`` placeholders; each record is a tuple (or list)
    of its parameters. ``conninfo``: a libpq connection string or URI."""

    def __init__(
        self,
        conninfo: str,
        sql: str,
        delivery_guarantee: DeliveryGuarantee | str = DeliveryGuarantee.EXACTLY_ONCE,
        batch_size: int = 1000,
        max_retries: int = 3,
        retry_backoff_ms: int = 100,
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
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigurationError(
                    f"PostgresSink {name} must be an integer >= {least}, got {value!r}"
                )
        try:
            self.delivery_guarantee = DeliveryGuarantee.parse(delivery_guarantee, "PostgresSink")
        except ValueError as e:
            raise ConfigurationError(str(e)) from None
        self.conninfo = conninfo
        self.sql = sql
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_backoff_ms = retry_backoff_ms

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
            with _connect(psycopg, self.conninfo) as conn:
                if self.delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE:
                    _check_prepared_transactions(conn)
        except psycopg.OperationalError as e:
            raise ConfigurationError(
                f"PostgresSink cannot connect to {_where(self.conninfo)}: {_first_line(e)}"
            ) from None

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return PostgresSinkWriter(self, context)

    def __repr__(self) -> str:
        return (
            f"PostgresSink({_where(self.conninfo)!r}, {self.sql!r}, {self.delivery_guarantee.name})"
        )


def transaction_id_prefix(job_name: str, operator_uid: str) -> str:
    """The start of every global transaction id of one sink of one job. The job's name (not
    its id) so that a job restored from a savepoint finds what it prepared before."""
    prefix = f"barrierflow:{job_name}:{operator_uid}:"
    if len(prefix.encode()) > _MAX_GID_BYTES - 40:
        digest = hashlib.sha256(prefix.encode()).hexdigest()[:16]
        job, uid = (_first_bytes(name, 40) for name in (job_name, operator_uid))
        prefix = f"barrierflow:{job}~{uid}~{digest}:"
    return prefix


class PostgresSinkWriter:
    def __init__(self, sink: PostgresSink, context: SinkWriterContext) -> None:
        self._psycopg = require("psycopg", "postgres", "PostgresSink")
        self._sink = sink
        self._guarantee = sink.delivery_guarantee
        self._subtask = context.subtask
        self._attempt = context.attempt
        self._prefix = transaction_id_prefix(context.job_name, context.operator_uid)
        self._conn: Any = None  # the open transaction's connection
        self._control: Any = None  # autocommit, for COMMIT/ROLLBACK PREPARED
        self._records: list[tuple] = []  # the open transaction's records (replayed on retry)
        self._written = 0  # how many of them the server has
        self._in_transaction = False
        self._preparing: str | None = None  # the global id of a PREPARE under way
        self._prepared: set[str] = set()  # prepared by this writer, not yet committed
        self._connect_data()
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            try:
                _check_prepared_transactions(self._conn)
            except ConfigurationError:
                self._close_data()
                raise

    # --- writing ------------------------------------------------------------------------------

    def write(self, records: list[Any]) -> None:
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

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        self._flush()
        if not self._in_transaction:
            return []
        if self._guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            self._retrying("COMMIT", lambda: self._conn.execute("COMMIT"), replay=True)
            self._end_transaction()
            return []
        gid = f"{self._prefix}{self._subtask}:{checkpoint_id}:{self._attempt}"
        statement = self._psycopg.sql.SQL("PREPARE TRANSACTION {}").format(
            self._psycopg.sql.Literal(gid)
        )
        self._preparing = gid
        self._retrying("PREPARE TRANSACTION", lambda: self._prepare(statement), replay=True)
        self._preparing = None
        self._prepared.add(gid)
        self._end_transaction()
        return [{"gid": gid, "subtask": self._subtask}]

    def _prepare(self, statement: Any) -> None:
        if self._in_transaction:
            self._conn.execute(statement)
        # else: a retry after a lost connection found the transaction already prepared

    def _flush(self) -> None:
        if self._written == len(self._records):
            return
        self._retrying("write", self._write_pending, replay=True)
        if self._guarantee is DeliveryGuarantee.NONE:
            self._retrying("COMMIT", lambda: self._conn.execute("COMMIT"), replay=True)
            self._end_transaction()

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
            if _retryable(self._psycopg, e):
                raise
            raise self._bad_record_error(batch, e) from None
        self._written = len(self._records)

    def _end_transaction(self) -> None:
        self._records = []
        self._written = 0
        self._in_transaction = False

    # --- committing ---------------------------------------------------------------------------

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            self._finish_prepared("COMMIT PREPARED", c["gid"])
            self._prepared.discard(c["gid"])

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """Commit the restored checkpoint's transactions and roll back every other prepared
        transaction this sink left. ``committables`` are every subtask's (union state); this
        subtask takes those whose owner maps to it, so no two subtasks race on one id."""
        # Whatever the guarantee now: a snapshot taken with EXACTLY_ONCE may be restored into
        # a job that writes AT_LEAST_ONCE, and its prepared transactions must still settle.
        mine = [c for c in committables if c["subtask"] % parallelism == self._subtask]
        self.commit(mine)
        keep = {c["gid"] for c in committables}
        for gid in self._prepared_leftovers():
            owner = int(gid[len(self._prefix) :].split(":")[0])
            if gid not in keep and owner % parallelism == self._subtask:
                log.info("PostgresSink rolls back %s, prepared by a failed attempt", gid)
                self._finish_prepared("ROLLBACK PREPARED", gid)

    def _prepared_leftovers(self) -> list[str]:
        rows = self._on_control(
            "list prepared transactions",
            lambda conn: conn.execute(
                "SELECT gid FROM pg_prepared_xacts "
                "WHERE database = current_database() AND starts_with(gid, %s)",
                (self._prefix,),
            ).fetchall(),
        )
        return [gid for (gid,) in rows if _owner_suffix(gid[len(self._prefix) :])]

    def _finish_prepared(self, verb: str, gid: str) -> None:
        psycopg = self._psycopg
        statement = psycopg.sql.SQL(verb + " {}").format(psycopg.sql.Literal(gid))

        def run(conn: Any) -> None:
            try:
                conn.execute(statement)
            except psycopg.errors.UndefinedObject:
                # No such prepared transaction: finished before (a commit repeated after a
                # failover, or by a subtask of an earlier attempt). Commits are idempotent.
                log.debug("PostgresSink: %s %s: already done", verb, gid)

        self._on_control(f"{verb} {gid}", run)

    def _on_control(self, what: str, action: Any) -> Any:
        def attempt() -> Any:
            if self._control is None or self._control.closed:
                self._control = _connect(self._psycopg, self._sink.conninfo)
            return action(self._control)

        return self._retrying(what, attempt, replay=False)

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
                if not _retryable(psycopg, e) or retry == self._sink.max_retries:
                    raise PostgresSinkError(
                        f"PostgresSink: {what} failed after {retry} retries "
                        f"(statement {self._sink.sql!r}, {_where(self._sink.conninfo)}): "
                        f"{type(e).__name__}: {_first_line(e)}"
                    ) from e
                log.warning(
                    "PostgresSink subtask %d: %s failed (%s: %s); retry %d of %d in %.2f s",
                    self._subtask, what, type(e).__name__, _first_line(e),
                    retry + 1, self._sink.max_retries, delay_s,
                )  # fmt: skip
                time.sleep(delay_s)
                delay_s = min(delay_s * 2, 10.0)
                if not replay:
                    self._close_control()
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
            with _connect(psycopg, self._sink.conninfo) as probe:
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
        return PostgresSinkError(
            f"PostgresSink: PostgreSQL refused {which} for statement {self._sink.sql!r}: "
            f"{type(error).__name__}: {_first_line(error)}"
        )

    # --- connections --------------------------------------------------------------------------

    def _connect_data(self) -> None:
        self._conn = _connect(self._psycopg, self._sink.conninfo)
        # A write that waits this long for a lock fails the task with the statement named,
        # rather than hanging it (our own prepared transactions never hold it: see write()).
        self._conn.execute("SET lock_timeout = '60s'")

    def _close_data(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _close_control(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None

    def close(self) -> None:
        """Rolls back an open (never prepared) transaction by closing its connection."""
        self._close_data()
        self._close_control()


def _connect(psycopg: Any, conninfo: str) -> Any:
    kwargs = {} if "connect_timeout" in conninfo else {"connect_timeout": 10}
    return psycopg.connect(conninfo, autocommit=True, **kwargs)


def _check_prepared_transactions(conn: Any) -> None:
    (value,) = conn.execute("SHOW max_prepared_transactions").fetchone()
    if int(value) <= 0:
        raise ConfigurationError(
            "PostgresSink with EXACTLY_ONCE needs prepared transactions, but the server has "
            "max_prepared_transactions = 0. Set max_prepared_transactions in postgresql.conf to "
            "at least the sink's parallelism times (max concurrent checkpoints + 1) and restart "
            "PostgreSQL, or use DeliveryGuarantee.AT_LEAST_ONCE with an upsert statement."
        )


_RETRYABLE_SQLSTATES = {"40001", "40P01", "57P01", "57P02", "57P03"}


def _retryable(psycopg: Any, error: Exception) -> bool:
    """A lost connection (class 08, or none reported), a serialization failure, a deadlock, a
    server shutting down: the same work may succeed on a new connection. Not a lock timeout,
    a full disk or a refused password."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith("08") or state in _RETRYABLE_SQLSTATES


def _owner_suffix(suffix: str) -> bool:
    parts = suffix.split(":")
    return len(parts) == 3 and all(p.isdigit() for p in parts)


def _where(conninfo: str) -> str:
    """The connection string without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(conninfo)
    except Exception:  # noqa: BLE001 - without psycopg, or malformed: no details
        return "PostgreSQL"
    user, host = info.get("user", ""), info.get("host", "localhost")
    return f"PostgreSQL {user}@{host}:{info.get('port', 5432)}/{info.get('dbname', '')}"


def _first_bytes(text: str, n: int) -> str:
    return text.encode()[:n].decode(errors="ignore")


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
