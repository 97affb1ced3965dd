"""What PostgresSink needs of the server: connections, its settings, its errors, and the
global ids of its prepared transactions.

**I/O:** connects to PostgreSQL.
"""

from __future__ import annotations

import hashlib
from typing import Any

from barrierflow.errors import ConfigurationError

_MAX_GID_BYTES = 200  # PostgreSQL's limit on a prepared transaction's global id


class PostgresSinkError(RuntimeError):
    """A statement PostgreSQL refused, or retries that ran out; names the record."""


def transaction_id_prefix(job_name: str, operator_uid: str) -> str:
    """The start of every global transaction id of one sink of one job. The job's name (not
    its id) so that a job restored from a savepoint finds what it prepared before."""
    prefix = f"barrierflow:{job_name}:{operator_uid}:"
    if len(prefix.encode()) > _MAX_GID_BYTES - 40:
        digest = hashlib.sha256(prefix.encode()).hexdigest()[:16]
        job, uid = (_first_bytes(name, 40) for name in (job_name, operator_uid))
        prefix = f"barrierflow:{job}~{uid}~{digest}:"
    return prefix


def transaction_owner(gid: str, prefix: str) -> int | None:
    """The subtask that prepared transaction ``gid`` (``<prefix><subtask>:<checkpoint>:
    <attempt>``), or None for an id of another form."""
    parsed = _parts(gid, prefix)
    return None if parsed is None else parsed[0]


def transaction_checkpoint(gid: str, prefix: str) -> int | None:
    """The checkpoint at whose barrier transaction ``gid`` was prepared, or None for an id of
    another form."""
    parsed = _parts(gid, prefix)
    return None if parsed is None else parsed[1]


def _parts(gid: str, prefix: str) -> tuple[int, int, int] | None:
    parts = gid[len(prefix) :].split(":")
    if not gid.startswith(prefix) or len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def connect(psycopg: Any, conninfo: str) -> Any:
    kwargs = {} if "connect_timeout" in conninfo else {"connect_timeout": 10}
    return psycopg.connect(conninfo, autocommit=True, **kwargs)


def check_prepared_transactions(conn: Any) -> None:
    (value,) = conn.execute("SHOW max_prepared_transactions").fetchone()
    if int(value) <= 0:
        raise ConfigurationError(
            "PostgresSink with EXACTLY_ONCE needs prepared transactions, but the server has "
            "max_prepared_transactions = 0. Set max_prepared_transactions in postgresql.conf to "
            "at least the sink's parallelism times (max concurrent checkpoints + 1) and restart "
            "PostgreSQL, or use DeliveryGuarantee.AT_LEAST_ONCE with an upsert statement."
        )


_RETRYABLE_SQLSTATES = {"40001", "40P01", "57P01", "57P02", "57P03"}


def retryable(psycopg: Any, error: Exception) -> bool:
    """A lost connection (class 08, or none reported), a serialization failure, a deadlock, a
    server shutting down: the same work may succeed on a new connection. Not a lock timeout,
    a full disk or a refused password."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith("08") or state in _RETRYABLE_SQLSTATES


def where(conninfo: str) -> str:
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


def first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
