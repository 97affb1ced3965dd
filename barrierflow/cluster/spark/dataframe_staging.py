"""A DataFrame's partitions written as Parquet files, one per partition, by the executors, for
``env.from_spark(df)``: a DataFrame is a plan that only a Spark job can compute, and the job's
own barrier stage cannot run another inside its tasks; so a Spark job of its own computes it
before the job is submitted, each partition's Arrow batches (``mapInArrow``) streamed into its
file. Only the files' paths and row counts come to the driver, never the rows.

**I/O:** runs a Spark job; the executors write the files through barrierflow's file systems,
with the driver's settings (``s3.*``). **Threading:** the driver's thread that submits the job.
"""

from __future__ import annotations

import uuid
from typing import Any

import pyarrow as pa


def stage_dataframe(df: Any, directory: str) -> tuple[pa.Schema, list[str]]:
    """Writes ``df``'s partitions under ``directory`` (which every executor must reach: local
    on one machine, else shared storage such as ``s3://``); returns the Arrow schema and the
    files written, in partition order (an empty partition writes none)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from barrierflow.checkpoint import file_systems

    schema = to_arrow_schema(df.schema)
    settings = file_systems.current_settings()
    root = directory.rstrip("/")

    def write_partition(batches):
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        file_systems.initialize(settings)  # a plain Spark task: no slot set them up
        context = TaskContext.get()
        partition = context.partitionId() if context is not None else 0
        path = f"{root}/part-{partition:05d}-{uuid.uuid4().hex}.parquet"
        writer, rows, out = None, 0, None
        for batch in batches:
            if writer is None:
                fs, target = file_systems.resolve(path)
                fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
                out = fs.open_output_stream(target)
                writer = pq.ParquetWriter(out, batch.schema, compression="snappy")
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is not None:
            writer.close()
            out.close()
            yield pa.RecordBatch.from_pydict(
                {"partition": [partition], "path": [path], "rows": [rows]}
            )

    written = df.mapInArrow(write_partition, "partition int, path string, rows long").collect()
    return schema, [r.path for r in sorted(written, key=lambda r: r.partition)]
