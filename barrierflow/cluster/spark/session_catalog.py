"""The Spark session's catalog as a ``TableCatalog`` for ``SparkTableSink``: a table's location,
format, partition columns and schema (``DESCRIBE TABLE EXTENDED`` and the table's schema as
Arrow), and ``refreshTable`` after a commit. Neither runs a Spark job: both are catalog
metadata, so the JobMaster can refresh while the job's barrier stage holds every slot.

The session is found when first asked (``describe``, on the driver when the job is checked),
so that a job with no such sink never touches Spark before it is submitted.

**I/O:** the catalog's (the JVM's). **Threading:** ``describe`` on the thread that submits the
job, ``refresh`` on the JobMaster's; the session object is shared, which PySpark allows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.connectors.spark_table.catalog_table import CatalogTable, TableCatalog
from barrierflow.errors import ConfigurationError


class SessionCatalog(TableCatalog):
    def __init__(self, session: Callable[[], Any]) -> None:
        """``session``: gives the SparkSession, or None if there is none."""
        self._session = session
        self._spark: Any = None

    def _get(self, table_name: str) -> Any:
        if self._spark is None:
            self._spark = self._session()
        if self._spark is None:
            raise ConfigurationError(
                f"the table {table_name!r} is in a Spark session's catalog, but there is no "
                "active Spark session: create it (SparkSession.builder.getOrCreate()) before "
                "execute(), or give it with env.set_spark_session(spark)"
            )
        return self._spark

    def describe(self, table_name: str) -> CatalogTable:
        from pyspark.sql.pandas.types import to_arrow_schema

        spark = self._get(table_name)
        if not spark.catalog.tableExists(table_name):
            raise ConfigurationError(
                f"there is no table {table_name!r} in the Spark session's catalog (current "
                f"database {spark.catalog.currentDatabase()!r}): create it first, e.g. "
                f"CREATE TABLE {table_name} (...) USING parquet"
            )
        details = _details(spark.sql(f"DESCRIBE TABLE EXTENDED {table_name}").collect())
        location = details.get("Location")
        if not location:
            raise ConfigurationError(
                f"the Spark table {table_name!r} has no location (a view?): write to a table "
                "that holds files"
            )
        partitions = tuple(c.name for c in spark.catalog.listColumns(table_name) if c.isPartition)
        schema = to_arrow_schema(spark.table(table_name).schema, timezone="UTC")
        return CatalogTable(
            table_name,
            local_or_uri(location),
            details.get("Provider", "unknown"),
            schema,
            partitions,
        )

    def refresh(self, table_name: str) -> None:
        self._get(table_name).catalog.refreshTable(table_name)


def _details(rows: list[Any]) -> dict[str, str]:
    """The ``# Detailed Table Information`` part of ``DESCRIBE TABLE EXTENDED``, by name."""
    details: dict[str, str] = {}
    detailed = False
    for row in rows:
        name, value = (row[0] or "").strip(), (row[1] or "").strip()
        if name.startswith("# Detailed Table Information"):
            detailed = True
        elif detailed and name:
            details[name] = value
    return details


def local_or_uri(location: str) -> str:
    """Spark's ``file:/path`` as a local path; ``s3a://`` and other URIs as they are."""
    if location.startswith("file://"):
        return location[len("file://") :]
    if location.startswith("file:"):
        return location[len("file:") :]
    return location
