"""The state processor and its neighbours, measured:

- ``write``: a savepoint of K keys bootstrapped from a DataFrame (``spark.range(K)``, a LONG
  count per key written by a ``KeyedStateBootstrapFunction``), on an embedded ``local[c]``
  Spark, for each ``c`` of ``--cores`` (each in a process of its own);
- ``read``: that savepoint's keyed state read back as a DataFrame and aggregated (every row
  through Spark), and, with ``--rocksdb``, a retained incremental RocksDB checkpoint of K keys;
- ``fsck``: ``checkpoints fsck`` of a job directory of ``--checkpoints`` incremental RocksDB
  checkpoints (no Spark);
- ``migrate``: what schema evolution costs per value at restore (a ROW_NAMED value state with a
  field added, removed and widened), in both backends, against a restore that migrates nothing
  (no Spark).

Prints one JSON line per figure; the results are checked (counts and sums), not timed alone.

    python bench/state_processor.py --keys 2000000 --cores 1,2 --rocksdb
    python bench/state_processor.py --only fsck --checkpoints 20
    python bench/state_processor.py --only migrate --values 200000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from barrierflow.common import Types
from barrierflow.datastream.state import ValueStateDescriptor

COUNT = ValueStateDescriptor("count", Types.LONG())


def emit(**figures) -> None:
    print(json.dumps({"bench": "state_processor", **figures}), flush=True)


def spark_phases(keys: int, cores: int, rocksdb: bool) -> None:
    """Write and read at ``local[cores]``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from barrierflow.cluster.spark.session import default_spark_log, get_or_create_session
    from barrierflow.datastream.state_backend import HashMapStateBackend
    from barrierflow.state_processor import (
        KeyedStateBootstrapFunction,
        OperatorTransformation,
        SavepointReader,
        SavepointWriter,
    )

    class Counts(KeyedStateBootstrapFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(COUNT)

        def process_element(self, row, ctx):
            self.count.update(row.id)

    spark = get_or_create_session(
        cores, master=f"local[{cores}]", conf={"spark.ui.enabled": "false"},
        spark_log=default_spark_log(),
    )  # fmt: skip
    scratch = tempfile.mkdtemp(prefix="bench-state-processor-")
    expected = keys * (keys - 1) // 2
    try:
        frame = spark.range(keys)
        started = time.perf_counter()
        path = (
            SavepointWriter.new_savepoint(spark, HashMapStateBackend(), 128)
            .with_operator(
                "counter",
                OperatorTransformation.bootstrap_with(frame)
                .key_by(lambda row: row.id, Types.LONG())
                .transform(Counts()),
            )
            .write(f"{scratch}/savepoint")
        )
        seconds = time.perf_counter() - started
        emit(phase="write", cores=cores, rows=keys, seconds=round(seconds, 2),
             rows_per_s=round(keys / seconds))  # fmt: skip
        read(
            spark, SavepointReader, (path, "counter"), "canonical savepoint", expected, keys, cores
        )
        if rocksdb:
            from barrierflow.testing.checkpoint_directory import write_job_checkpoints

            (metadata,) = write_job_checkpoints(f"{scratch}/rocksdb/job", 1, keys)
            assert metadata.checkpoint_id == 1
            chk = f"{scratch}/rocksdb/job/chk-1"
            snapshot = (chk, "count")
            read(
                spark,
                SavepointReader,
                snapshot,
                "incremental rocksdb checkpoint",
                keys,
                keys,
                cores,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()


def read(spark, reader, snapshot, what: str, expected: int, keys: int, cores: int) -> None:
    """Reads operator ``uid``'s counts from ``snapshot`` (path, uid) and checks their sum."""
    path, uid = snapshot
    started = time.perf_counter()
    frame = reader.read(spark, path).read_keyed_state(uid, [COUNT])
    (row,) = frame.selectExpr("count(*) AS n", "sum(count) AS total").collect()
    seconds = time.perf_counter() - started
    assert (row.n, row.total) == (keys, expected), (row, keys, expected)
    emit(phase="read", snapshot=what, cores=cores, rows=keys, seconds=round(seconds, 2),
         rows_per_s=round(keys / seconds))  # fmt: skip


def fsck_phase(checkpoints: int, keys_per_checkpoint: int, threads: int) -> None:
    from barrierflow.checkpoint.fsck_scan import fsck
    from barrierflow.testing.checkpoint_directory import write_job_checkpoints

    scratch = tempfile.mkdtemp(prefix="bench-fsck-")
    try:
        write_job_checkpoints(f"{scratch}/ckpt/job", checkpoints, keys_per_checkpoint)
        files = sum(len(names) for _, _, names in os.walk(scratch))
        size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(scratch) for n in ns)
        for threads_now in sorted({1, threads}):
            started = time.perf_counter()
            (report,) = fsck(f"{scratch}/ckpt", threads_now)
            seconds = time.perf_counter() - started
            assert report.healthy and len(report.snapshots) == checkpoints
            emit(phase="fsck", checkpoints=checkpoints, files=files, bytes=size,
                 threads=threads_now, seconds=round(seconds, 3),
                 mb_per_s=round(size / seconds / 1e6, 1))  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def migrate_phase(values: int) -> None:
    from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
    from barrierflow.checkpoint.storage import CheckpointDirectory
    from barrierflow.common.types import Row
    from barrierflow.protocol.checkpoint_barrier import (
        CheckpointKind,
        CheckpointOptions,
        SnapshotFormat,
    )
    from barrierflow.protocol.key_group_range import KeyGroupRange
    from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
    from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend

    v1 = Types.ROW_NAMED(["id", "name", "visits"], [Types.INT(), Types.STRING(), Types.INT()])
    v2 = Types.ROW_NAMED(["visits", "id", "country"], [Types.LONG(), Types.INT(), Types.STRING()])
    scratch = tempfile.mkdtemp(prefix="bench-migrate-")
    full = KeyGroupRange(0, 127)

    def backend(kind: str, name: str):
        if kind == "hashmap":
            return HeapKeyedStateBackend(128, full)
        return RocksDBKeyedStateBackend(128, full, f"{scratch}/{name}")

    try:
        for kind in ("hashmap", "rocksdb"):
            source = backend(kind, "source")
            state = source.get_state(ValueStateDescriptor("profile", v1))
            for i in range(values):
                source.key_context.key = i
                state.update(Row(i, f"user-{i}", i % 50))  # positional, as a job may store it
            root = f"{scratch}/{kind}-savepoint"
            options = CheckpointOptions(CheckpointKind.SAVEPOINT, SnapshotFormat.NATIVE,
                                        target_location=root)  # fmt: skip
            streams = CheckpointStreams(CheckpointDirectory(root), 1, "p", 0, 1, 0, savepoint=True)
            handles = source.snapshot(1, options)(streams)
            source.dispose()
            timings = {}
            for label, declared in (("as written", v1), ("migrated", v2)):
                target = backend(kind, f"target-{label}")
                target.restore(handles, StorageRestoreStreams(CheckpointDirectory(root), False))
                started = time.perf_counter()
                target.get_state(ValueStateDescriptor("profile", declared))
                timings[label] = time.perf_counter() - started
                target.key_context.key = values - 1
                value = target.get_state(ValueStateDescriptor("profile", declared)).value()
                visits = value[2] if declared is v1 else value.visits
                assert visits == (values - 1) % 50, value
                target.dispose()
            per_value = (timings["migrated"] - timings["as written"]) / values
            emit(
                phase="migrate",
                backend=kind,
                values=values,
                seconds=round(timings["migrated"], 3),
                us_per_value=round(per_value * 1e6, 2),
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=2_000_000)
    parser.add_argument("--cores", default="1,2", help="local[c] for each c, comma-separated")
    parser.add_argument("--rocksdb", action="store_true", help="read an incremental checkpoint too")
    parser.add_argument("--checkpoints", type=int, default=20)
    parser.add_argument("--keys-per-checkpoint", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--values", type=int, default=200_000)
    parser.add_argument("--only", choices=["spark", "fsck", "migrate"])
    parser.add_argument("--spark-cores", type=int, help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.spark_cores:
        spark_phases(args.keys, args.spark_cores, args.rocksdb)
        return
    if args.only in (None, "spark"):
        for cores in (int(c) for c in args.cores.split(",")):
            child = [
                sys.executable,
                __file__,
                "--keys",
                str(args.keys),
                "--spark-cores",
                str(cores),
            ]
            subprocess.run(child + (["--rocksdb"] if args.rocksdb else []), check=True)
    if args.only in (None, "fsck"):
        fsck_phase(args.checkpoints, args.keys_per_checkpoint, args.threads)
    if args.only in (None, "migrate"):
        migrate_phase(args.values)


if __name__ == "__main__":
    main()
