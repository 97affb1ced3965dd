"""IcebergSource: an Apache Iceberg table's rows, on pyiceberg.

Bounded (the default), it reads one snapshot (``snapshot_id``, else the current one when the job
starts). With ``discovery_interval`` it never ends: it reads the current snapshot, then every
interval the data files that newer snapshots added (for tables that are appended to; a rewrite
would be read again, as with Flink's Iceberg source reading appends only).

Each data file is a split, handed out one at a time to the readers that ask
(``files/file_enumerator.py``; every path found is in its checkpointed state, so each file is read
once across restores at any parallelism); a reader's position is the rows it emitted from the
file (``tables/parquet_split_reader.py``), read through the job's file systems. Records are ``Row``s
named by the table's columns. Snapshots with delete files (row-level deletes) are refused.

**I/O:** loads the table from its catalog on the driver (``check``) and in the enumerator.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.connectors.iceberg.catalog_ref import CatalogRef
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.tables.table_file_split import TableFileSplit
from barrierflow.connectors.tables.table_snapshot_source import TableSnapshotSource
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of


class IcebergSource(TableSnapshotSource):
    def __init__(
        self,
        catalog: Any,
        table: str,
        catalog_properties: dict[str, str] | None = None,
        snapshot_id: int | None = None,
        discovery_interval: Any = None,
    ) -> None:
        if not isinstance(table, str) or not table:
            raise ConfigurationError(
                f"IcebergSource needs a table identifier such as 'db.events', got {table!r}"
            )
        self.table = table
        self.catalog = CatalogRef.of(catalog, catalog_properties, f"IcebergSource({table!r})")
        self.snapshot_id = snapshot_id
        self.interval_ms = (
            None
            if discovery_interval is None
            else millis_of(discovery_interval, "IcebergSource(discovery_interval=)")
        )
        if self.interval_ms is not None and snapshot_id is not None:
            raise ConfigurationError(
                "IcebergSource: a snapshot_id is one snapshot (bounded); discovery_interval "
                "follows the newest: give one or the other"
            )
        self.schema: pa.Schema | None = None  # the table's, known after check()

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver: the table exists; its schema is the records'."""
        table = self.catalog.load_table(self.table, repr(self))
        self.schema = table.schema().as_arrow()

    def _splits(self) -> list[TableFileSplit]:
        """Every data file of the snapshot (the current one, unless one was given)."""
        table = self.catalog.load_table(self.table, repr(self))
        snapshot = None if self.snapshot_id is None else table.snapshot_by_id(self.snapshot_id)
        if self.snapshot_id is not None and snapshot is None:
            raise ConfigurationError(f"{self!r}: the table has no snapshot {self.snapshot_id}")
        snapshot = snapshot or table.current_snapshot()
        if snapshot is None:
            return []  # an empty table
        splits = []
        for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
            if task.delete_files:
                raise ConfigurationError(
                    f"{self!r}: snapshot {snapshot.snapshot_id} has row-level deletes, which "
                    "this source cannot apply; read the table with Spark (env.from_spark)"
                )
            splits.append(TableFileSplit(task.file.file_path, snapshot=snapshot.snapshot_id))
        return splits

    def __repr__(self) -> str:
        return f"IcebergSource({self.catalog.name!r}, {self.table!r})"
