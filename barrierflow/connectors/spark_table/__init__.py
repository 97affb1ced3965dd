"""A table of the Spark session's catalog: ``SparkTableSink``, exactly once into a Parquet
table by staged files committed per checkpoint, with no Spark job while the job runs. The
session's catalog is reached through ``TableCatalog`` (``cluster/spark/session_catalog.py``
is Spark's), so that this package imports no Spark."""

from barrierflow.connectors.spark_table.catalog_table import CatalogTable, TableCatalog
from barrierflow.connectors.spark_table.spark_table_sink import SparkTableSink

__all__ = ["CatalogTable", "SparkTableSink", "TableCatalog"]
