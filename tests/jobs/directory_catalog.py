"""A ``TableCatalog`` of Parquet tables in local directories, for SparkTableSink without Spark:
it describes each table as given and counts the refreshes its committer asks for."""

from __future__ import annotations

import pyarrow as pa

from barrierflow.datastream.connectors.spark_table import CatalogTable, TableCatalog
from barrierflow.errors import ConfigurationError


class DirectoryCatalog(TableCatalog):
    def __init__(self, *tables: CatalogTable) -> None:
        self.tables = {t.name: t for t in tables}
        self.refreshed: list[str] = []

    @classmethod
    def parquet(cls, name: str, location: str, schema: pa.Schema) -> DirectoryCatalog:
        return cls(CatalogTable(name, location, "parquet", schema))

    def describe(self, table_name: str) -> CatalogTable:
        if table_name not in self.tables:
            raise ConfigurationError(f"there is no table {table_name!r}")
        return self.tables[table_name]

    def refresh(self, table_name: str) -> None:
        self.refreshed.append(table_name)
