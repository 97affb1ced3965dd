"""IcebergSink: exactly-once appends to an Apache Iceberg table, on pyiceberg.

Writers stage Parquet files under the table's location at each barrier
(``iceberg_writer.py``); when the checkpoint completes, one global committer on the JobMaster
appends them as one snapshot recording the checkpoint id, the job and the sink uid
(``iceberg_committer.py``). Files staged by attempts that failed are in no snapshot and never
read; Iceberg's orphan file removal deletes them.

``catalog``: a catalog name as ``pyiceberg.catalog.load_catalog`` takes it (with
``catalog_properties``, or configured as pyiceberg reads configuration) or a catalog object;
``table``: an identifier such as ``"db.events"``. The table must exist, unpartitioned or
partitioned by identity (a file per partition and checkpoint); its schema is the records': a
record is a dict or named ``Row`` (by column name), or a tuple, list or ``Row`` (by position).

**I/O:** ``check`` loads the table from its catalog on the driver.
"""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.iceberg.catalog_ref import CatalogRef
from barrierflow.connectors.iceberg.iceberg_committable import (
    ICEBERG_COMMITTABLES,
    IcebergCommittable,
)
from barrierflow.connectors.iceberg.iceberg_committer import IcebergCommitter
from barrierflow.connectors.iceberg.iceberg_writer import IcebergWriter
from barrierflow.connectors.interfaces.sink import JobSettings, Sink, SinkWriter, SinkWriterContext
from barrierflow.errors import ConfigurationError


class IcebergSink(Sink):
    def __init__(
        self, catalog: Any, table: str, catalog_properties: dict[str, str] | None = None
    ) -> None:
        if not isinstance(table, str) or not table:
            raise ConfigurationError(
                f"IcebergSink needs a table identifier such as 'db.events', got {table!r}"
            )
        self.table = table
        self.catalog = CatalogRef.of(catalog, catalog_properties, f"IcebergSink({table!r})")

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver: the table exists, unpartitioned or partitioned by identity."""
        table = self.catalog.load_table(self.table, repr(self))
        others = [f for f in table.spec().fields if str(f.transform) != "identity"]
        if others:
            raise ConfigurationError(
                f"{self!r}: the table is partitioned by {[str(f) for f in others]}; IcebergSink "
                "appends to unpartitioned tables and tables partitioned by identity (a column's "
                "value): write to such a table"
            )

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return IcebergWriter(self.catalog, self.table, context)

    def create_global_committer(self) -> IcebergCommitter:
        return IcebergCommitter(self.catalog, self.table)

    def committable_codec(self) -> StructCodec[IcebergCommittable]:
        return ICEBERG_COMMITTABLES

    def __repr__(self) -> str:
        return f"IcebergSink({self.catalog.name!r}, {self.table!r})"
