"""PostgreSQL: ``PostgresSink``, exactly once by prepared transactions (``sink.py``). Needs
psycopg: ``pip install 'barrierflow[postgres]'``. Each name loads when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.lazy_names import LazyNames

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
