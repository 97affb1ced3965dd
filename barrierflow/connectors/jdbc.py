"""Deprecated: JDBC's mapping onto the PostgreSQL sink is internal now
(``connectors/postgres/jdbc.py``); PyFlink's JDBC sink is
``barrierflow.datastream.connectors.jdbc``. Each name warns and gives the one it was."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_JDBC = "barrierflow.connectors.postgres.jdbc"
_MOVED = MovedNames(
    __name__,
    {
        name: f"{_JDBC}.{name}"
        for name in (
            "POSTGRES_DRIVER",
            "JdbcConnection",
            "JdbcExecution",
            "jdbc_postgres_sink",
            "psycopg_statement",
        )
    },
    note="internal; build JDBC sinks with barrierflow.datastream.connectors.jdbc.JdbcSink",
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
