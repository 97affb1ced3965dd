"""DeltaSink: exactly-once appends to a Delta Lake table, on delta-rs (``deltalake``).

Writers stage Parquet files in the table's directory at each barrier (``delta_writer.py``);
when the checkpoint completes, one global committer on the JobMaster commits all of them as one
Delta transaction with a ``SetTransaction`` (``delta_committer.py``). The table is created by
the first commit if it does not exist. Files staged by attempts that failed are in no commit
and never read; ``DeltaTable.vacuum()`` removes them.

The schema is a pyarrow schema or ``Types.ROW_NAMED``; without one, the stream's declared
``Types.ROW_NAMED`` type, else an existing table's. A record is a dict or named ``Row`` (by
column name), or a tuple, list or ``Row`` (by position). ``partition_by`` names partition
columns (an existing table's must be the same). Paths are local or ``s3://`` with the job's
``s3.*`` settings, as checkpoints are; ``storage_options`` (delta-rs's) override them.

**I/O:** ``check`` reads the table's metadata on the driver, if there is a table.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.checkpoint.file_systems import current_settings
from barrierflow.common.typeinfo import TypeInformation
from barrierflow.connectors.base.optional_dependency import require
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.delta.delta_committable import DELTA_COMMITTABLES, DeltaCommittable
from barrierflow.connectors.delta.delta_committer import DeltaCommitter, open_table
from barrierflow.connectors.delta.delta_paths import storage_options, table_uri
from barrierflow.connectors.delta.delta_writer import DeltaWriter
from barrierflow.connectors.interfaces.sink import JobSettings, Sink, SinkWriter, SinkWriterContext
from barrierflow.connectors.tables.arrow_records import arrow_schema, describe, same_columns
from barrierflow.errors import ConfigurationError


class DeltaSink(Sink):
    def __init__(
        self,
        path: str,
        schema: Any = None,
        partition_by: list[str] | str | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise ConfigurationError(f"DeltaSink needs the table's path or URI, got {path!r}")
        self.uri = table_uri(path)
        self.schema: pa.Schema | None = (
            None if schema is None else arrow_schema(schema, f"DeltaSink({path!r})")
        )
        self.partition_by = (
            [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
        )
        self.storage_options = dict(storage_options or {})
        if self.schema is not None:
            self._check_partition_columns(self.schema)

    def set_input_type(self, type_info: Any) -> None:
        """Without a schema of its own, a stream declared ``Types.ROW_NAMED`` gives it."""
        if self.schema is None and isinstance(type_info, TypeInformation):
            self.schema = arrow_schema(type_info, repr(self))
            self._check_partition_columns(self.schema)

    def check(self, job: JobSettings | None = None) -> None:
        """On the driver: a table there already must have the sink's schema and partition
        columns; without a schema, the sink takes the table's."""
        options = storage_options(self.uri, current_settings().s3, self.storage_options)
        table = open_table(require("deltalake", "delta", "DeltaSink"), self.uri, options)
        if table is None:
            if self.schema is None:
                raise ConfigurationError(
                    f"DeltaSink: there is no Delta table at {self.uri} and no schema to create "
                    "it with: pass schema=pyarrow.schema([...]) or Types.ROW_NAMED([...], [...])"
                )
            return
        existing = pa.schema(table.schema().to_arrow())
        columns = list(table.metadata().partition_columns)
        if self.schema is None:
            self.schema, self.partition_by = existing, self.partition_by or columns
        if self.partition_by != columns:
            raise ConfigurationError(
                f"DeltaSink: the table at {self.uri} is partitioned by {columns}, the sink "
                f"by {self.partition_by}: pass partition_by={columns}"
            )
        if not same_columns(existing, self.schema):
            raise ConfigurationError(
                f"DeltaSink: the table at {self.uri} has columns {describe(existing)}, the sink's "
                f"schema is {describe(self.schema)}: make the schema the table's, or write to "
                "another table"
            )

    def _check_partition_columns(self, schema: pa.Schema) -> None:
        missing = [c for c in self.partition_by if c not in schema.names]
        if missing:
            raise ConfigurationError(
                f"DeltaSink({self.uri!r}): partition columns {missing} are not in the schema "
                f"{describe(schema)}"
            )

    def _resolved_schema(self) -> pa.Schema:
        if self.schema is None:  # check() did not run (a test harness): ask the table
            self.check()
        assert self.schema is not None
        return self.schema

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return DeltaWriter(self.uri, self._resolved_schema(), self.partition_by, context)

    def create_global_committer(self) -> DeltaCommitter:
        return DeltaCommitter(self.uri, self.schema, self.partition_by, self.storage_options)

    def committable_codec(self) -> StructCodec[DeltaCommittable]:
        return DELTA_COMMITTABLES

    def __repr__(self) -> str:
        return f"DeltaSink({self.uri!r})"
