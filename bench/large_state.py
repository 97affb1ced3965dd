"""Large keyed state: K keys loaded, then updates touching about 1% of the keys per second;
after C completed checkpoints one process is killed (SIGKILL) and the job restores.

Per variant (rocksdb-full, rocksdb-incremental, rocksdb-incremental-local, i.e. with local
recovery, and hashmap) prints one JSON line: load throughput, checkpoint duration median/max,
bytes written per checkpoint median/max, state size, bytes under the job's checkpoint
directory when the kill came (after C checkpoints), and the restore: time of the slowest
subtask and bytes read from checkpoint storage.

    python bench/large_state.py --keys 2000000 --checkpoints 20
    python bench/large_state.py --keys 200000 --checkpoints 5 --variants rocksdb-incremental
    python bench/large_state.py --variants rocksdb-incremental \
        -D state.backend.rocksdb.compaction.level.target-file-size-base=2mb

With ``--savepoints``, instead: K keys loaded on RocksDB with incremental checkpoints, then a
canonical and a native savepoint taken while the updates go on; prints one JSON line per
snapshot (the last incremental checkpoint, each savepoint: duration, bytes) and one per restore
of each at parallelism 2 and 3 (into RocksDB; the slowest subtask's time, bytes read).

    python bench/large_state.py --keys 2000000 --savepoints
    python bench/large_state.py --keys 2000000 --savepoints --restore-from savepoint-canonical
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import signal
import statistics
import tempfile
import time

import cloudpickle

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import KeyedProcessFunction, MapFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import JobCanceledError

VARIANTS = {
    "rocksdb-full": {"state.backend.type": "rocksdb"},
    "rocksdb-incremental": {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": True,
    },
    "rocksdb-incremental-local": {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": True,
        "execution.state-recovery.from-local": True,
    },
    "hashmap": {"state.backend.type": "hashmap"},
}


class Events(MapFunction):
    """Index -> key. Each source subtask reads one contiguous split of the indices: its first
    K/P indices load its share of the keys, the rest update keys spread over all K, paced to
    ``update_rate`` per second over all subtasks. Kills its process once, when C checkpoints
    have completed, after recording the checkpoint directory's size."""

    def __init__(self, keys, split_length, parallelism, update_rate, kill_after, ckpt, scratch):
        self.keys = keys
        self.split_length = split_length
        self.parallelism = parallelism
        self.update_rate = update_rate
        self.kill_after = kill_after
        self.ckpt = ckpt
        self.scratch = scratch
        self._paced_from = None
        self._updates = 0
        self._loaded = False
        self._load_started = None

    def map(self, i):
        split, j = divmod(i, self.split_length)
        share = self.keys // self.parallelism
        if j < share:
            if self._load_started is None:
                self._load_started = time.time()
            if j == share - 1:
                self._record("load", split, {"start": self._load_started, "end": time.time()})
            return split * share + j
        self._updates += 1
        if self._updates % 256 == 0:
            self._pace()
            if split == 0 and self._updates % 2048 == 0:
                self._maybe_kill()
        return (i * 2654435761) % self.keys

    def _pace(self) -> None:
        now = time.monotonic()
        if self._paced_from is None:
            self._paced_from = (now, self._updates)
            return
        started, base = self._paced_from
        due = started + (self._updates - base) * self.parallelism / self.update_rate
        if due > now:
            time.sleep(due - now)

    def _maybe_kill(self) -> None:
        marker = os.path.join(self.scratch, "killed.json")
        if os.path.exists(marker):
            return
        histories = glob.glob(os.path.join(self.ckpt, "*", "_history.json"))
        if not histories:
            return
        with open(histories[0]) as f:
            records = json.load(f)["records"]
        completed = [r for r in records if r["status"] == "COMPLETED"]
        if len(completed) < self.kill_after:
            return
        size = sum(
            os.path.getsize(os.path.join(d, name))
            for d, _, names in os.walk(os.path.dirname(histories[0]))
            for name in names
        )
        self._record("killed", None, {"checkpoint_dir_bytes": size, "completed": len(completed)})
        os.kill(os.getpid(), signal.SIGKILL)

    def _record(self, what: str, split, data: dict) -> None:
        name = f"{what}.json" if split is None else f"{what}-{split}.json"
        path = os.path.join(self.scratch, name)
        if not os.path.exists(path):
            with open(path, "w") as f:
                json.dump(data, f)


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, key, ctx):
        self.count.update((self.count.value() or 0) + 1)
        return None


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def run(variant: str, args: argparse.Namespace) -> dict:
    work = tempfile.mkdtemp(prefix=f"barrierflow-large-state-{variant}-")
    ckpt, scratch = os.path.join(work, "ckpt"), os.path.join(work, "scratch")
    os.makedirs(scratch)
    p = args.parallelism
    update_rate = args.keys * args.update_fraction
    # enough updates to outlast C checkpoints after the load, and a few more after the restore
    updates = int(update_rate * (args.checkpoints + 15) * args.interval_ms / 1000)
    split_length = args.keys // p + updates // p
    env = StreamExecutionEnvironment().set_parallelism(p)
    env.configure(
        {
            **VARIANTS[variant],
            "taskmanager.state.local.root-dirs": os.path.join(work, "local"),
            **dict(d.split("=", 1) for d in args.define),
        }
    )
    env.enable_checkpointing(args.interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(ckpt)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 500))
    (
        env.from_source(NumberSequenceSource(0, split_length * p - 1), "events")
        .map(Events(args.keys, split_length, p, update_rate, args.checkpoints, ckpt, scratch))
        .key_by(lambda k: k)
        .process(Count())
        .uid("count")
        .sink_to(DiscardingSink())
    )
    result = env.execute(f"large-state-{variant}")
    loads = [_read_json(f) for f in glob.glob(os.path.join(scratch, "load-*.json"))]
    killed_path = os.path.join(scratch, "killed.json")
    killed = _read_json(killed_path) if os.path.exists(killed_path) else {}
    completed = [c for c in result.checkpoint_history if c.status.value == "COMPLETED"]
    durations = [c.duration_ms for c in completed]
    written = [c.checkpointed_size for c in completed]
    restore = result.restores[0] if result.restores else None
    load_s = max(x["end"] for x in loads) - min(x["start"] for x in loads) if loads else None
    return {
        "variant": variant,
        "configuration": args.define,
        "keys": args.keys,
        "updates_per_s": round(update_rate),
        "load_events_per_s": round(args.keys / load_s) if load_s else None,
        "completed_checkpoints": len(completed),
        "checkpoint_ms_median": round(statistics.median(durations), 1),
        "checkpoint_ms_max": round(max(durations), 1),
        "written_bytes_median": round(statistics.median(written)),
        "written_bytes_mean": round(statistics.mean(written)),
        "written_bytes_max": max(written),
        "state_bytes_last": completed[-1].state_size,
        "checkpoint_dir_bytes_at_kill": killed.get("checkpoint_dir_bytes"),
        "checkpoints_at_kill": killed.get("completed"),
        "attempts": result.attempts,
        "restore_ms": round(restore.max_restore_ms, 1) if restore else None,
        "restore_bytes_read": restore.bytes_read if restore else None,
    }


def run_savepoints(args: argparse.Namespace) -> list[dict]:
    from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention
    from barrierflow.cluster.spark.session import get_or_create_session
    from barrierflow.common.job_client import SavepointFormatType

    spark = get_or_create_session(3)
    work = tempfile.mkdtemp(prefix="barrierflow-large-state-savepoints-")
    ckpt, scratch = os.path.join(work, "ckpt"), os.path.join(work, "scratch")
    os.makedirs(scratch)
    p = args.parallelism
    update_rate = args.keys * args.update_fraction
    updates = int(update_rate * 600)  # more than it needs: the job is canceled
    split_length = args.keys // p + updates // p
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(p)
    env.configure({**VARIANTS["rocksdb-incremental"], **dict(d.split("=", 1) for d in args.define)})
    env.enable_checkpointing(args.interval_ms)
    config = env.get_checkpoint_config().set_checkpoint_storage(ckpt)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    (
        env.from_source(NumberSequenceSource(0, split_length * p - 1), "events")
        .map(Events(args.keys, split_length, p, update_rate, 10**9, ckpt, scratch))
        .key_by(lambda k: k)
        .process(Count())
        .uid("count")
        .sink_to(DiscardingSink())
    )
    client = env.execute_async("large-state-savepoints")
    while len(glob.glob(os.path.join(scratch, "load-*.json"))) < p:
        time.sleep(0.2)
    time.sleep(3 * args.interval_ms / 1000)  # checkpoints of the loaded state
    lines = []
    snapshots = {}
    for format_type in (SavepointFormatType.CANONICAL, SavepointFormatType.NATIVE):
        started = time.monotonic()
        path = client.trigger_savepoint(os.path.join(work, "savepoints"), format_type).result()
        snapshots[f"savepoint-{format_type.value}"] = path
        lines.append(
            {
                "snapshot": f"savepoint-{format_type.value}",
                "wall_ms": round((time.monotonic() - started) * 1000),
                "bytes": _tree_bytes(path),
            }
        )
    time.sleep(2 * args.interval_ms / 1000)
    client.cancel()
    with contextlib.suppress(JobCanceledError):
        client.get_job_execution_result().result()
    history = _read_json(glob.glob(os.path.join(ckpt, "*", "_history.json"))[0])
    done = [r for r in history["records"] if r["status"] == "COMPLETED"]
    for line, record in zip(lines, [r for r in done if r.get("external_path")], strict=True):
        line["duration_ms"] = round(record["duration_ms"], 1)
        line["state_bytes"] = record["state_size"]
    checkpoint = [r for r in done if not r.get("external_path")][-1]
    chk = glob.glob(os.path.join(ckpt, "*", f"chk-{checkpoint['checkpoint_id']}"))[0]
    snapshots["checkpoint-incremental"] = chk
    lines.insert(
        0,
        {
            "snapshot": "checkpoint-incremental",
            "duration_ms": round(checkpoint["duration_ms"], 1),
            "bytes": checkpoint["checkpointed_size"],
            "state_bytes": checkpoint["state_size"],
        },
    )
    for name, path in snapshots.items():
        if args.restore_from and name not in args.restore_from.split(","):
            continue
        for parallelism in (2, 3):
            lines.append(
                {"restore": name, "parallelism": parallelism, **_restore(spark, path, parallelism)}
            )
    return lines


def _restore(spark, path: str, parallelism: int) -> dict:
    """Restores the counts only (its source is new: one record per subtask), without
    checkpointing, so that the job ends as soon as it restored."""
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(parallelism)
    env.configure(
        {"state.backend.type": "rocksdb", "execution.state-recovery.ignore-unclaimed-state": True}
    )
    env.set_restore_path(path)
    (
        env.from_source(NumberSequenceSource(0, parallelism - 1), "probe")
        .uid("probe")
        .key_by(lambda k: k)
        .process(Count())
        .uid("count")
        .sink_to(DiscardingSink())
    )
    restore = env.execute("restore").restores[0]
    return {"restore_ms": round(restore.max_restore_ms, 1), "bytes_read": restore.bytes_read}


def _tree_bytes(directory: str) -> int:
    return sum(
        os.path.getsize(os.path.join(d, name))
        for d, _, names in os.walk(directory)
        for name in names
    )


def _read_json(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2_000_000)
    parser.add_argument("--update-fraction", type=float, default=0.01, help="of keys, per second")
    parser.add_argument("--checkpoints", type=int, default=20, help="kill after this many")
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument(
        "-D", dest="define", action="append", default=[], help="key=value, more configuration"
    )
    parser.add_argument("--savepoints", action="store_true", help="savepoints and restores")
    parser.add_argument(
        "--restore-from",
        default="",
        help="with --savepoints: restore only from these snapshots (comma-separated: "
        "checkpoint-incremental, savepoint-canonical, savepoint-native); all by default",
    )
    args = parser.parse_args()
    if args.keys % args.parallelism:
        parser.error("--keys must be a multiple of --parallelism")
    if args.savepoints:
        for line in run_savepoints(args):
            print(json.dumps(line), flush=True)
        return
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            parser.error(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
        print(json.dumps(run(variant, args)), flush=True)


if __name__ == "__main__":
    main()
