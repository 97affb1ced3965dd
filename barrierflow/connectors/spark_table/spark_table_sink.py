"""SparkTableSink: exactly-once appends to a Parquet table of the Spark session's catalog,
without a Spark job while the job runs (its barrier stage holds every slot).

On the driver, when the job is checked, the catalog says where the table's files are and their
schema (``TableCatalog.describe``; Spark's session catalog by default, ``cluster/spark/
session_catalog.py``). Writers stage a Parquet file per checkpoint under the table's location,
in ``_barrierflow/staging`` (Spark skips names that start with ``_``); when the checkpoint
completes, the global committer on the JobMaster moves them into the table, records the
checkpoint in a marker under ``_barrierflow/committed`` (a replayed commit is skipped) and
refreshes the table in the catalog (``spark_table_committer.py``). Spark then reads what was
committed, and only that.

Refused on the driver, with the reason: a table that does not exist, one that is not Parquet
or is partitioned, and a stream whose declared ``Types.ROW_NAMED`` type is not the table's
columns. Records are dicts or named ``Row``s (by column name), or tuples, lists or ``Row``s
(by position).

**I/O:** ``check`` asks the catalog, on the driver.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.sink import Sink, SinkWriter, SinkWriterContext
from barrierflow.connectors.spark_table.catalog_table import CatalogTable, TableCatalog
from barrierflow.connectors.spark_table.spark_table_committable import (
    SPARK_TABLE_COMMITTABLES,
    SparkTableCommittable,
)
from barrierflow.connectors.spark_table.spark_table_committer import SparkTableCommitter
from barrierflow.connectors.spark_table.spark_table_writer import SparkTableWriter
from barrierflow.connectors.tables.arrow_records import arrow_schema, describe, same_columns
from barrierflow.errors import ConfigurationError


class SparkTableSink(Sink):
    def __init__(self, table_name: str, catalog: TableCatalog | None = None) -> None:
        """``catalog``: where the table is described; the Spark session's by default (the
        active session's, or the one given to ``env.set_spark_session``)."""
        if not isinstance(table_name, str) or not table_name:
            raise ConfigurationError(
                f"SparkTableSink needs a table name of the session's catalog, such as "
                f"'db.events', got {table_name!r}"
            )
        self.table_name = table_name
        self.catalog = catalog
        self._session_catalog: TableCatalog | None = None  # the job's, on the driver only
        self.declared: pa.Schema | None = None  # the stream's declared type, as columns
        self.table: CatalogTable | None = None  # known after check(), on the driver

    def set_input_type(self, type_info: Any) -> None:
        if isinstance(type_info, TypeInformation) and type_info.name == "ROW_NAMED":
            self.declared = arrow_schema(type_info, repr(self))

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver: the table exists, is Parquet and unpartitioned, and has the stream's
        declared columns (a stream without a declared type writes the table's)."""
        if job is not None:
            self._session_catalog = job.table_catalog
        table = self._catalog().describe(self.table_name)
        if table.provider.lower() != "parquet":
            raise ConfigurationError(
                f"{self!r}: the table is a {table.provider} table; this sink commits only to "
                "Parquet tables (USING parquet). Write Delta tables with DeltaSink and Iceberg "
                "tables with IcebergSink"
            )
        if table.partition_columns:
            raise ConfigurationError(
                f"{self!r}: the table is partitioned by {list(table.partition_columns)}, which "
                "this sink does not write; write to an unpartitioned table"
            )
        if self.declared is not None and not same_columns(table.schema, self.declared):
            raise ConfigurationError(
                f"{self!r}: the table has columns {describe(table.schema)}, the stream is "
                f"declared as {describe(self.declared)}: declare the stream with the table's "
                "columns (Types.ROW_NAMED), or write to another table"
            )
        self.table = table

    def _catalog(self) -> TableCatalog:
        catalog = self.catalog or self._session_catalog
        if catalog is None:
            raise ConfigurationError(
                f"{self!r} has no catalog to find its table in: run the job from the driver, "
                "with a Spark session, or pass catalog="
            )
        return catalog

    def _checked(self) -> CatalogTable:
        if self.table is None:  # check() did not run (a test harness): ask the catalog
            self.check()
        assert self.table is not None
        return self.table

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        table = self._checked()
        return SparkTableWriter(self.table_name, table.location, table.schema, context)

    def create_global_committer(self) -> SparkTableCommitter:
        table = self._checked()
        catalog = self.catalog or self._session_catalog
        return SparkTableCommitter(self.table_name, table.location, catalog)

    def committable_codec(self) -> StructCodec[SparkTableCommittable]:
        return SPARK_TABLE_COMMITTABLES

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_session_catalog": None}  # the session stays on the driver

    def __repr__(self) -> str:
        return f"SparkTableSink({self.table_name!r})"
