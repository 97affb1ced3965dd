"""Internal: a table of the Spark session's catalog, ``SparkTableSink``, exactly once into a
Parquet table by staged files committed per checkpoint, with no Spark job while the job runs;
the public names are in ``barrierflow.datastream.connectors.spark_table``. The session's catalog
is reached through ``TableCatalog`` (``cluster/spark/session_catalog.py`` is Spark's), so that
this package imports no Spark. The names this package offered before are deprecated: each warns
and gives the public one."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        "CatalogTable": "barrierflow.datastream.connectors.spark_table.CatalogTable",
        "SparkTableSink": "barrierflow.datastream.connectors.spark_table.SparkTableSink",
        "TableCatalog": "barrierflow.datastream.connectors.spark_table.TableCatalog",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
