"""JDBC's options and statements, mapped onto PostgresSink: PyFlink's ``JdbcSink`` writes
through a Java JDBC driver; barrierflow writes to PostgreSQL through psycopg (the ``postgres``
extra), so a ``jdbc:postgresql:`` URL becomes a libpq connection URI and the statement's
``?`` placeholders become psycopg's ``%s``. Other databases' URLs are refused, naming what
they would need. Performs no I/O (the sink it builds connects when the job runs).

At-least-once (``JdbcSink.sink``): records are written in batches of ``batch_size`` and
committed at every checkpoint, and also once ``batch_interval_ms`` has passed since the last
commit when a record arrives; a batch that fails on a lost connection is retried
``max_retries`` times. After a failure the records since the restored checkpoint are written
again: make the statement an upsert (``INSERT ... ON CONFLICT (key) DO UPDATE ...``).
Exactly-once (``exactly_once_sink``): PostgresSink's prepared transactions, committed when
the checkpoint completes (docs/adr/0007-postgres-two-phase-commit.md). Decisions:
docs/adr/0020-formats-and-jdbc.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.postgres.sink import PostgresSink
from barrierflow.errors import ConfigurationError

POSTGRES_DRIVER = "org.postgresql.Driver"
# JDBC URL parameters of PostgreSQL's driver -> libpq's
_PARAMETERS = {
    "user": "user",
    "password": "password",
    "sslmode": "sslmode",
    "sslrootcert": "sslrootcert",
    "sslcert": "sslcert",
    "sslkey": "sslkey",
    "ApplicationName": "application_name",
    "connectTimeout": "connect_timeout",
}


@dataclass(frozen=True)
class JdbcConnection:
    url: str
    driver_name: str | None = None
    user_name: str | None = None
    password: str | None = None

    def conninfo(self) -> str:
        """The libpq URI of a ``jdbc:postgresql:`` URL, with the user and password given
        apart. Raises ConfigurationError naming what cannot be mapped."""
        if self.driver_name not in (None, POSTGRES_DRIVER):
            raise ConfigurationError(
                f"JdbcSink: driver {self.driver_name!r} is a Java JDBC driver; barrierflow "
                f"writes to PostgreSQL through psycopg: use {POSTGRES_DRIVER!r} or none"
            )
        if not isinstance(self.url, str) or not self.url.startswith("jdbc:postgresql:"):
            raise ConfigurationError(
                f"JdbcSink: {self.url!r} is not a PostgreSQL JDBC URL (jdbc:postgresql://host:"
                "port/database); barrierflow's JDBC sink writes to PostgreSQL only, through "
                "psycopg: other databases need their Java JDBC driver, which needs the JVM"
            )
        rest = self.url.removeprefix("jdbc:postgresql:")
        if not rest.startswith("//"):
            rest = "///" + rest  # jdbc:postgresql:database: the local server
        parts = urlsplit("postgresql:" + rest)
        params = {}
        for key, value in parse_qsl(parts.query, keep_blank_values=True):
            if key == "ssl":
                params["sslmode"] = "require" if value.lower() in ("", "true") else "disable"
            elif key in _PARAMETERS:
                params[_PARAMETERS[key]] = value
            else:
                raise ConfigurationError(
                    f"JdbcSink: the URL parameter {key!r} of {self.url!r} has no libpq "
                    f"equivalent barrierflow knows; it takes {sorted({'ssl', *_PARAMETERS})}"
                )
        if self.user_name is not None:
            params["user"] = self.user_name
        if self.password is not None:
            params["password"] = self.password
        netloc = parts.netloc or ""
        query = urlencode(params, quote_via=quote)
        return f"postgresql://{netloc}{parts.path}" + (f"?{query}" if query else "")


def psycopg_statement(sql: str, type_info: Any) -> str:
    """``sql`` with JDBC's ``?`` placeholders (outside quotes) as ``%s`` and ``%`` doubled;
    their number must be the row type's arity."""
    if not isinstance(type_info, TypeInformation) or type_info.name not in (
        "ROW",
        "ROW_NAMED",
        "TUPLE",
    ):
        raise ConfigurationError(
            f"JdbcSink needs the records' row type (Types.ROW([...])), got {type_info!r:.100}"
        )
    if not isinstance(sql, str) or not sql.strip():
        raise ConfigurationError(f"JdbcSink needs an SQL statement, got {sql!r}")
    out, quote_char, placeholders = [], None, 0
    for c in sql:
        if quote_char is not None:
            quote_char = None if c == quote_char else quote_char
        elif c in ("'", '"'):
            quote_char = c
        elif c == "?":
            placeholders += 1
            out.append("%s")
            continue
        out.append("%%" if c == "%" else c)
    if placeholders != len(type_info.fields):
        raise ConfigurationError(
            f"JdbcSink: the statement {sql!r} has {placeholders} ? placeholders, the row type "
            f"{type_info!r} has {len(type_info.fields)} fields"
        )
    return "".join(out)


@dataclass(frozen=True)
class JdbcExecution:
    batch_size: int = 5000  # Flink's defaults
    batch_interval_ms: int = 0
    max_retries: int = 3

    def __post_init__(self) -> None:
        for name, least in (("batch_size", 1), ("batch_interval_ms", 0), ("max_retries", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigurationError(
                    f"JdbcExecutionOptions {name} must be an integer >= {least}, got {value!r}"
                )


def jdbc_postgres_sink(
    sql: str,
    type_info: Any,
    connection: JdbcConnection,
    execution: JdbcExecution,
    guarantee: DeliveryGuarantee,
) -> PostgresSink:
    return PostgresSink(
        connection.conninfo(),
        psycopg_statement(sql, type_info),
        guarantee,
        batch_size=execution.batch_size,
        max_retries=execution.max_retries,
        commit_interval_ms=execution.batch_interval_ms,
    )
