"""barrierflow's connector to a table of the Spark session's catalog: ``SparkTableSink``,
exactly once into a Parquet table by staged files committed per checkpoint, with no Spark job
while the job runs; ``TableCatalog`` is how it reaches a catalog (the Spark session's, or one of
the program's: ``CatalogTable`` describes a table). Built in ``barrierflow/connectors/
spark_table/``; each name loads when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "CatalogTable": "barrierflow.connectors.spark_table.catalog_table",
        "SparkTableSink": "barrierflow.connectors.spark_table.spark_table_sink",
        "TableCatalog": "barrierflow.connectors.spark_table.catalog_table",
    },
)

__all__ = [
    "CatalogTable",
    "SparkTableSink",
    "TableCatalog",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.spark_table.catalog_table import CatalogTable, TableCatalog
    from barrierflow.connectors.spark_table.spark_table_sink import SparkTableSink
