"""PostgresSink's committer: ``COMMIT PREPARED`` of the transactions a checkpoint recorded;
``ROLLBACK PREPARED`` of those failed attempts left that no checkpoint names, and, when the job
ended for good, of those prepared after its last completed checkpoint.

A commit of an id no longer prepared is done (by an earlier attempt, or by another subtask
after a rescale): commits are idempotent. Unless the server reports that transaction rolled
back: then its rows are lost to the table, and the commit fails naming it rather than going
on without them (a savepoint commits nothing, and a recovery from an older checkpoint rolls
back what it prepared; a job later started from that savepoint lands here).

A statement that fails closes the connection and raises; the framework tries again with
backoff, on a new connection.

**Threading:** the task thread. **I/O:** one autocommit connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.interfaces.committables import JobEndFate, Recovery, fate_at_job_end
from barrierflow.connectors.interfaces.sink import Committable, Committer, CommitterContext
from barrierflow.connectors.postgres.client import (
    PostgresSinkError,
    connect,
    first_line,
    transaction_checkpoint,
    transaction_id_prefix,
    transaction_owner,
    where,
)

if TYPE_CHECKING:
    from barrierflow.connectors.postgres.sink import PostgresSink

log = logging.getLogger("barrierflow.connectors.postgres")


class PostgresCommitter(Committer):
    def __init__(self, sink: PostgresSink, context: CommitterContext) -> None:
        self._psycopg = require("psycopg", "postgres", "PostgresSink")
        self._conninfo = sink.conninfo
        self._prefix = transaction_id_prefix(context.job_name, context.operator_uid)
        self._conn: Any = None

    def commit(self, committables: list[Committable]) -> None:
        for c in committables:
            self._finish("COMMIT PREPARED", c.data.gid, c.data.xid)

    def abort_lingering(self, recovery: Recovery) -> None:
        """Rolls back the prepared transactions of the old subtasks this one answers for that
        the restored checkpoint does not name (it commits those)."""
        named = {c.data.gid for c in recovery.committables}
        for gid in self._prepared(recovery):
            if gid not in named:
                log.info("PostgresSink rolls back %s, prepared by a failed attempt", gid)
                self._finish("ROLLBACK PREPARED", gid)

    def settle_at_job_end(self, recovery: Recovery, last_completed: int | None) -> None:
        """Commits what the old subtasks it answers for prepared up to checkpoint
        ``last_completed``; rolls back what they prepared after, which no checkpoint names."""
        for gid in self._prepared(recovery):
            checkpoint_id = transaction_checkpoint(gid, self._prefix)
            assert checkpoint_id is not None  # _prepared's ids are of our form
            if fate_at_job_end(checkpoint_id, last_completed) is JobEndFate.COMMIT:
                log.warning(
                    "PostgresSink commits %s, prepared for checkpoint %d, which completed: "
                    "the job ended before committing it", gid, checkpoint_id,
                )  # fmt: skip
                self._finish("COMMIT PREPARED", gid)
            else:
                log.warning(
                    "PostgresSink rolls back %s, prepared for checkpoint %d, which never "
                    "completed: the job ended for good", gid, checkpoint_id,
                )  # fmt: skip
                self._finish("ROLLBACK PREPARED", gid)

    def _prepared(self, recovery: Recovery) -> list[str]:
        """The global ids of this sink's prepared transactions by the old subtasks this one
        answers for."""
        rows = self._run(
            "list prepared transactions",
            lambda conn: conn.execute(
                "SELECT gid FROM pg_prepared_xacts "
                "WHERE database = current_database() AND starts_with(gid, %s)",
                (self._prefix,),
            ).fetchall(),
        )
        return [
            gid
            for (gid,) in rows
            if (owner := transaction_owner(gid, self._prefix)) is not None and recovery.owns(owner)
        ]

    def _finish(self, verb: str, gid: str, xid: str = "") -> None:
        """``xid``: the server's id of the transaction ("" when not known), asked after when
        ``gid`` is no longer prepared."""
        psycopg = self._psycopg
        statement = psycopg.sql.SQL(verb + " {}").format(psycopg.sql.Literal(gid))

        def run(conn: Any) -> None:
            try:
                conn.execute(statement)
            except psycopg.errors.UndefinedObject:
                # No such prepared transaction: finished before (a commit repeated after a
                # failover, or by a subtask of an earlier attempt), or rolled back.
                if xid and verb == "COMMIT PREPARED":
                    self._check_not_rolled_back(conn, gid, xid)
                log.debug("PostgresSink: %s %s: already done", verb, gid)

        self._run(f"{verb} {gid}", run)

    def _check_not_rolled_back(self, conn: Any, gid: str, xid: str) -> None:
        try:
            (status,) = conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
        except self._psycopg.Error as e:  # e.g. "in the future": another server than before
            status, why = None, first_line(e)
        else:
            why = "its status is no longer kept"
        if status == "aborted":
            raise PostgresSinkError(
                f"PostgresSink: transaction {gid} (server transaction {xid}), which the restored "
                f"checkpoint or savepoint counts as written, was rolled back, so its rows are not "
                f"in the table ({where(self._conninfo)}). Going on would lose them. Likely "
                "cause: the job was restored from a savepoint after a recovery from an older "
                "checkpoint had rolled back what that savepoint prepared (a savepoint taken "
                "while the job runs commits nothing). Restore from a checkpoint or savepoint "
                "taken after that recovery instead."
            )
        if status is None:
            log.warning(
                "PostgresSink: %s is no longer prepared, and whether server transaction %s "
                "committed cannot be told (%s); counted as committed", gid, xid, why,
            )  # fmt: skip

    def _run(self, what: str, action: Any) -> Any:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = connect(self._psycopg, self._conninfo)
            return action(self._conn)
        except self._psycopg.Error as e:
            self.close()
            raise PostgresSinkError(
                f"PostgresSink: {what} failed ({where(self._conninfo)}): "
                f"{type(e).__name__}: {first_line(e)}"
            ) from e

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
