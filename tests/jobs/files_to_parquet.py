"""Text files of numbers read by a FileSource, the odd/even running sums, written as Parquet part
files (FileSink's bulk format), with optional injected faults. One source subtask, so that
each key sees its values in one order and the sums are the same in every run. Shipped to Spark
workers by value (cloudpickle)."""

from __future__ import annotations

import os

import cloudpickle
import pyarrow as pa
import pyarrow.parquet as pq

from barrierflow.common import RestartStrategies, Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from barrierflow.datastream.formats.parquet import ParquetWriterFactory
from tests.jobs.odd_even import MAX_PARALLELISM, Fault, RunningSum, Throttle

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("total", pa.int64())])


def write_input(in_dir: str, n: int, files: int = 4) -> None:
    """The values 1..n in ``files`` files, consecutive ranges in name order."""
    os.makedirs(in_dir, exist_ok=True)
    per_file = -(-n // files)
    for i in range(files):
        values = range(i * per_file + 1, min(n, (i + 1) * per_file) + 1)
        with open(os.path.join(in_dir, f"numbers-{i:03d}.txt"), "w") as f:
            f.writelines(f"{v}\n" for v in values)


def build(
    env: StreamExecutionEnvironment,
    in_dir: str,
    out_dir: str,
    checkpoint_dir: str,
    fault: Fault | None = None,
    state_backend: str = "hashmap",
    delay_s: float = 0.0003,
    restarts: int = 3,
    conf: dict | None = None,
) -> StreamExecutionEnvironment:
    env.configure({"state.backend.type": state_backend, **(conf or {})})
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(restarts, 200))
    env.set_max_parallelism(MAX_PARALLELISM)  # both keyed subtasks busy (odd_even.py)
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), in_dir).build()
    (
        env.from_source(source, "lines")
        .set_parallelism(1)
        .map(int, output_type=Types.LONG())
        .set_parallelism(1)
        .map(Throttle(delay_s, fault))
        .set_parallelism(1)
        .uid("throttle")
        .key_by(lambda x: x % 2)
        .process(RunningSum())
        .uid("running-sum")
        .sink_to(FileSink.for_bulk_format(out_dir, ParquetWriterFactory(SCHEMA)).build())
        .uid("sink")
    )
    return env


def read_committed(out_dir: str) -> list[tuple[int, int, int]]:
    """Every row of the visible (committed) Parquet part files, as Spark would list them."""
    rows = []
    if not os.path.isdir(out_dir):
        return rows
    for name in sorted(os.listdir(out_dir)):
        if name.startswith((".", "_")):
            continue
        table = pq.read_table(os.path.join(out_dir, name))
        rows += zip(*(table.column(c).to_pylist() for c in ("k", "v", "total")), strict=True)
    return rows


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
