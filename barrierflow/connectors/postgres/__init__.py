"""PostgreSQL: ``PostgresSink``, exactly once by prepared transactions (``sink.py``). Needs
psycopg: ``pip install 'barrierflow[postgres]'``."""

from barrierflow.connectors.postgres.client import PostgresSinkError, transaction_id_prefix
from barrierflow.connectors.postgres.sink import PostgresSink

__all__ = ["PostgresSink", "PostgresSinkError", "transaction_id_prefix"]
