"""A DataFrame's partitions written as Parquet files, one per partition, by the executors, for
``env.from_spark(df)``: a DataFrame is a plan that only a Spark job can compute, and the job's
own barrier stage cannot run another inside its tasks; so a Spark job of its own computes it
before the job is submitted, with Spark's own Parquet writer. Only the files' names come to
the driver, never the rows.

**I/O:** runs a Spark job; lists the files written. **Threading:** the driver's thread that
submits the job.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from barrierflow.checkpoint import file_systems


def stage_dataframe(df: Any, directory: str) -> tuple[pa.Schema, list[str]]:
    """Writes ``df``'s partitions under ``directory`` (which every executor and barrierflow
    must reach: local on one machine, else shared storage such as ``s3://``, which Spark reaches
    through its own ``s3a`` settings); returns the Arrow schema and the files, in partition
    order."""
    root = directory.rstrip("/")
    df.write.mode("overwrite").parquet(root)
    fs, path = file_systems.resolve(root)
    found = fs.get_file_info(pafs.FileSelector(path))
    names = sorted(
        f.base_name
        for f in found
        if f.type == pafs.FileType.File and f.base_name.endswith(".parquet")
    )
    files = [f"{root}/{name}" for name in names]  # part-00000-..., part-00001-...: in order
    if not files:
        return pa.schema([]), []
    fs, first = file_systems.resolve(files[0])
    with fs.open_input_file(first) as f:
        return pq.read_schema(f), files
