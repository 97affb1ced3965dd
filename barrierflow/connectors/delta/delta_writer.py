"""A Delta sink's writer: converts records to Arrow as they arrive, and at each barrier writes
them as Parquet files into the table's directory, one per partition; the files stay invisible
until the global committer lists them in the table's log (``delta_committer.py``).

**Threading:** the subtask's task thread only. **I/O:** writes data files through the job's
file systems (``checkpoint/file_systems.py``: local, or ``s3://`` with the job's settings).
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

from barrierflow.checkpoint.file_systems import resolve
from barrierflow.connectors.delta.delta_committable import DeltaAddFile, DeltaCommittable
from barrierflow.connectors.delta.delta_paths import partition_dir, partition_value
from barrierflow.connectors.interfaces.sink import SinkWriter, SinkWriterContext
from barrierflow.connectors.tables.arrow_records import to_record_batch
from barrierflow.connectors.tables.table_files import (
    column_stats,
    file_name,
    split_by_partition,
    write_parquet,
)


def app_id(context: SinkWriterContext) -> str:
    """The Delta ``SetTransaction`` app id of a job's sink: a job submitted afresh is a new
    application (its checkpoint ids start again at 1); a failover or a restore with ``-s``
    commits the restored committables under the app id they were prepared with."""
    return f"barrierflow/{context.job_id}/{context.operator_uid}"


class DeltaWriter(SinkWriter):
    def __init__(
        self,
        uri: str,
        schema: pa.Schema,
        partition_by: list[str],
        context: SinkWriterContext,
    ) -> None:
        self._fs, self._root = resolve(uri)
        self._schema = schema
        self._partition_by = partition_by
        self._context = context
        self._app_id = app_id(context)
        self._where = f"Delta table {uri}"
        self._batches: list[pa.RecordBatch] = []

    def write(self, records: list[Any]) -> None:
        if records:
            self._batches.append(to_record_batch(records, self._schema, self._where))

    def prepare_commit(self, checkpoint_id: int) -> list[DeltaCommittable]:
        """Writes what came since the last barrier as whole files; returns one committable
        listing them as Delta ``add`` actions."""
        if not self._batches:
            return []
        rows = pa.Table.from_batches(self._batches, self._schema)
        self._batches = []
        files = []
        for part in split_by_partition(rows, self._partition_by, keep_columns=False):
            values = {k: partition_value(v) for k, v in part.values.items()}
            directory = partition_dir(values)
            name = file_name(self._context.subtask, checkpoint_id)
            relative = f"{directory}/{name}" if directory else name
            size = write_parquet(self._fs, f"{self._root}/{relative}", part.rows)
            modified_ms = int(time.time() * 1000)
            files.append(DeltaAddFile(relative, size, values, modified_ms, column_stats(part.rows)))
        return [DeltaCommittable(self._app_id, files)]

    def close(self) -> None:
        self._batches = []  # not prepared: the sources replay it after a restore
