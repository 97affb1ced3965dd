"""A Spark table sink's writer: converts records to Arrow as they arrive, and at each barrier
writes them as one Parquet file into the table's staging directory (``_barrierflow/staging``
under its location, which Spark does not read); the global committer moves it into the table
when the checkpoint completes (``spark_table_committer.py``).

**Threading:** the subtask's task thread only. **I/O:** writes data files through the job's
file systems (``checkpoint/file_systems.py``: local, or ``s3://`` with the job's settings).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from barrierflow.checkpoint.file_systems import resolve
from barrierflow.connectors.interfaces.sink import SinkWriter, SinkWriterContext
from barrierflow.connectors.spark_table.spark_table_committable import SparkTableCommittable
from barrierflow.connectors.spark_table.table_commit import app_id, staging_dir
from barrierflow.connectors.tables.arrow_records import to_record_batch
from barrierflow.connectors.tables.table_files import file_name, write_parquet


class SparkTableWriter(SinkWriter):
    def __init__(
        self, table_name: str, location: str, schema: pa.Schema, context: SinkWriterContext
    ) -> None:
        self._app = app_id(context.job_id, context.operator_uid)
        self._fs, self._staging = resolve(staging_dir(location, self._app))
        self._schema = schema
        self._subtask = context.subtask
        self._where = f"Spark table {table_name}"
        self._batches: list[pa.RecordBatch] = []

    def write(self, records: list[Any]) -> None:
        if records:
            self._batches.append(to_record_batch(records, self._schema, self._where))

    def prepare_commit(self, checkpoint_id: int) -> list[SparkTableCommittable]:
        """Writes what came since the last barrier as one staged file; returns one committable
        naming it (a unique name: a replayed checkpoint stages a new file, and a staged file
        that no commit moves is never read)."""
        if not self._batches:
            return []
        rows = pa.Table.from_batches(self._batches, self._schema)
        self._batches = []
        name = file_name(self._subtask, checkpoint_id)
        write_parquet(self._fs, f"{self._staging}/{name}", rows)
        return [SparkTableCommittable(self._app, name)]

    def close(self) -> None:
        self._batches = []  # not prepared: the sources replay it after a restore
