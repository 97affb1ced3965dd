"""DeltaSource: a Delta Lake table's rows, on delta-rs (``deltalake``).

Bounded (the default), it reads one version of the table (``version``, else the latest when
the job starts). With ``discovery_interval`` it never ends: it reads the latest version, then
every interval looks for files that newer versions added and reads those; this follows a table
that is appended to (a rewrite such as OPTIMIZE or an overwrite would be read again, so it is
for append-only tables, as Flink's Delta source in its continuous mode).

Each data file is a split (``files/file_enumerator.py`` hands them out one at a time to the readers
that ask; every path it found is in its checkpointed state, so each file is read once across
restores at any parallelism); a reader's position is the rows it emitted from the file
(``tables/parquet_split_reader.py``). Records are ``Row``s named by the table's columns. Tables with
deletion vectors or column mapping are refused. Paths are local or ``s3://`` with the job's
``s3.*`` settings; ``storage_options`` (delta-rs's) override them.

**I/O:** reads the table's log on the driver (``check``) and in the enumerator.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from barrierflow.checkpoint.file_systems import current_settings
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.delta.delta_committer import open_table
from barrierflow.connectors.delta.delta_paths import partition_value, storage_options, table_uri
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.tables.table_file_split import TableFileSplit
from barrierflow.connectors.tables.table_snapshot_source import TableSnapshotSource
from barrierflow.errors import ConfigurationError
from barrierflow.eventtime.durations import millis_of

_UNSUPPORTED = ("deletionVectors", "columnMapping")


class DeltaSource(TableSnapshotSource):
    def __init__(
        self,
        path: str,
        version: int | None = None,
        discovery_interval: Any = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise ConfigurationError(f"DeltaSource needs the table's path or URI, got {path!r}")
        self.uri = table_uri(path)
        self.version = version
        self.interval_ms = (
            None
            if discovery_interval is None
            else millis_of(discovery_interval, "DeltaSource(discovery_interval=)")
        )
        if self.interval_ms is not None and version is not None:
            raise ConfigurationError(
                "DeltaSource: a version is one version of the table (bounded); "
                "discovery_interval follows the newest: give one or the other"
            )
        self.storage_options = dict(storage_options or {})
        self.schema: pa.Schema | None = None  # the table's, known after check()

    def _table(self) -> Any:
        options = storage_options(self.uri, current_settings().s3, self.storage_options)
        table = open_table(require("deltalake", "delta", "DeltaSource"), self.uri, options)
        if table is None:
            raise ConfigurationError(f"DeltaSource: there is no Delta table at {self.uri}")
        features = set(table.protocol().reader_features or ())
        if features & set(_UNSUPPORTED):
            raise ConfigurationError(
                f"DeltaSource: the table at {self.uri} uses {sorted(features & set(_UNSUPPORTED))}"
                ", which this source cannot read; read it with Spark (env.from_spark) instead"
            )
        if self.version is not None:
            table.load_as_version(self.version)
        return table

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver: the table exists and can be read; its schema is the records'."""
        self.schema = pa.schema(self._table().schema().to_arrow())

    def _splits(self) -> list[TableFileSplit]:
        """Every data file of the table's version (the latest, unless one was given)."""
        table = self._table()
        version = table.version()
        adds = pa.table(table.get_add_actions(flatten=False)).to_pylist()
        return [
            TableFileSplit(
                f"{self.uri}/{unquote(a['path'])}",
                partition={k: partition_value(v) for k, v in (a.get("partition") or {}).items()},
                version=version,
            )
            for a in adds
        ]

    def __repr__(self) -> str:
        return f"DeltaSource({self.uri!r})"
