"""Internal: PostgreSQL, ``PostgresSink`` exactly once by prepared transactions (``sink.py``), and
JDBC's mapping onto it (``jdbc.py``); the public names are in
``barrierflow.datastream.connectors.postgres`` and ``.jdbc``. The names this package offered
before are deprecated: each warns and gives the public one. Needs psycopg only where a job
writes to PostgreSQL."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        "PostgresSink": "barrierflow.datastream.connectors.postgres.PostgresSink",
        "PostgresSinkError": "barrierflow.datastream.connectors.postgres.PostgresSinkError",
        "transaction_id_prefix": "barrierflow.datastream.connectors.postgres.transaction_id_prefix",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
