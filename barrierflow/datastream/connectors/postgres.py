"""barrierflow's PostgreSQL connector: ``PostgresSink``, exactly once by prepared transactions
(docs/adr/0007-postgres-two-phase-commit.md), built in ``barrierflow/connectors/postgres/``.
``PostgresSinkError`` is what it raises for a record or a server it cannot write to;
``transaction_id_prefix`` names the prepared transactions of a sink, for a look at the server.
Needs psycopg (``pip install 'barrierflow[postgres]'``): each name loads when first asked for.
PyFlink's ``JdbcSink`` writes through it too (``jdbc``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "PostgresSink": "barrierflow.connectors.postgres.sink",
        "PostgresSinkError": "barrierflow.connectors.postgres.client",
        "transaction_id_prefix": "barrierflow.connectors.postgres.client",
    },
)

__all__ = [
    "PostgresSink",
    "PostgresSinkError",
    "transaction_id_prefix",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.postgres.client import PostgresSinkError, transaction_id_prefix
    from barrierflow.connectors.postgres.sink import PostgresSink
