"""An Iceberg sink's writer: converts records to Arrow as they arrive, and at each barrier
writes them as Parquet files under the table's ``data/`` location, one per partition of an
identity-partitioned table, through the table's FileIO; the files stay invisible until the
global committer appends them in a snapshot (``iceberg_committer.py``).

**Threading:** the subtask's task thread only. **I/O:** loads the table from its catalog when
made; writes data files.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.connectors.iceberg.catalog_ref import CatalogRef
from barrierflow.connectors.iceberg.iceberg_committable import IcebergCommittable
from barrierflow.connectors.interfaces.sink import SinkWriter, SinkWriterContext
from barrierflow.connectors.tables.arrow_records import to_record_batch
from barrierflow.connectors.tables.table_files import file_name, split_by_partition


def identity_columns(table: Any) -> list[str]:
    """The columns an identity-partitioned table is partitioned by (none: unpartitioned)."""
    schema = table.schema()
    return [schema.find_field(f.source_id).name for f in table.spec().fields]


class IcebergWriter(SinkWriter):
    def __init__(self, catalog: CatalogRef, identifier: str, context: SinkWriterContext) -> None:
        self._where = f"Iceberg table {identifier!r}"
        table = catalog.load_table(identifier, self._where)
        self._io = table.io
        self._data = f"{table.location().rstrip('/')}/data"
        self._schema: pa.Schema = table.schema().as_arrow()
        self._partition_by = identity_columns(table)
        self._context = context
        self._batches: list[pa.RecordBatch] = []

    def write(self, records: list[Any]) -> None:
        if records:
            self._batches.append(to_record_batch(records, self._schema, self._where))

    def prepare_commit(self, checkpoint_id: int) -> list[IcebergCommittable]:
        """Writes what came since the last barrier as whole files, one per partition (the
        committer's ``add_files`` reads each file's partition from its column statistics);
        returns a committable naming them, the job and the sink uid."""
        if not self._batches:
            return []
        rows = pa.Table.from_batches(self._batches, self._schema)
        self._batches = []
        paths = []
        for part in split_by_partition(rows, self._partition_by, keep_columns=True):
            path = f"{self._data}/{file_name(self._context.subtask, checkpoint_id)}"
            with self._io.new_output(path).create(overwrite=False) as out:
                pq.write_table(part.rows, out, compression="snappy")
            paths.append(path)
        return [IcebergCommittable(self._context.job_id, self._context.operator_uid, paths)]

    def close(self) -> None:
        self._batches = []  # not prepared: the sources replay it after a restore
