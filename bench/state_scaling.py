"""How the engine's costs grow with keyed state: the keyed count (``keyed_count.py``'s) on
RocksDB with incremental checkpoints and local recovery at 100,000, 1,000,000 and 10,000,000
keys, and on the heap backend at 100,000 and 1,000,000, fed the same changes in each.

An incremental checkpoint should cost what changed since the last one, not the size of the
state; a restore from the local copy should not read the state back from checkpoint storage;
memory should not follow the key count on RocksDB. The goals, RocksDB at 10 M keys against
1 M at the same change rate: checkpoint duration (p50) and bytes uploaded per checkpoint
(p50) within 2x; the restore after a killed task process at most 3 s beyond the restart
delay; peak RSS within 2x. The goals judge medians: on RocksDB every fourth checkpoint or so
uploads about the whole state (each checkpoint flushes the memtable into a new level-0 file;
the fourth starts a compaction into level 1, which the changed keys, spread over every key
group, overlap whole, so it is rewritten), which the p99 and the mean show.

**How "the same update rate, 1% of keys change per second" is read.** Both cannot hold at
every size on this machine (1% of 10 M keys a second is 100,000 updates a second, more than
one keyed subtask of Python sustains with a RocksDB read and write each), and the goals
compare sizes "at the same change rate". So the rate is what is held fixed: the source feeds
``--rate`` updates a second (default 10,000, 1% of the 1 M reference size) at every size, and
each second's updates go to the next slice of ``--change-fraction`` (1%) of the keys, a
rolling window (second s: keys from s x window on), spread evenly over it. Keys changed per
second are then ``min(rate, 1% of K)``: 10,000 at 1 M and at 10 M (every tenth key of the
100,000-key window), 1,000 at 100,000 keys (each updated 10 times a second). Between 1 M and
10 M a checkpoint's change is the same; only the state around it grows. Each line prints the
window and the keys changed per second.

Per (backend, size), one job, in a child process of its own (so that the peak RSS of its
process tree, the child, its Spark JVM and Python workers, is that case's alone, and not a
JVM heap or a reused Python worker that grew in a larger case before it):

1. load: the K keys written once each, as fast as the job goes, at parallelism 1
   (throughput: keys a second, at the keyed count, first key to last);
2. steady: ``--warmup-s``, then ``--steady-s`` at the fixed rate (paced in the source,
   ``PacedSequence``, so that a checkpoint's trigger does not wait behind a paced batch) with
   a checkpoint every ``--interval-ms``: checkpoint duration p50 / p99 and bytes uploaded per
   checkpoint (the checkpoint's persisted, incremental size) p50 / p99 over the checkpoints
   taken in that window, the update rate the job held, the peak RSS during that window;
3. a kill: SIGKILL of the Python task process that runs the keyed count (its pid, which the
   count reports, checked to descend from this process); the restore is the time from the
   kill to the first record the keyed count of the recovered attempt processed, less the
   restart delay (``--restart-delay-ms``, as the JobMaster logged it). The engine's own
   figure (the first record of any subtask: the source's may come before the count
   restored) and the slowest subtask's restore time and bytes read from checkpoint storage
   are printed beside it;
4. a rescale 1 -> 2 through ``JobClient.rescale`` (the source and feed keep their
   parallelism 1 of their own; the keyed count and sink go to 2): the downtime the rescale's
   record reports (from the stop to the first record, as ``bench/rescale.py`` reads it) and
   the time from the request to the first record of both new keyed subtasks;
5. a stop with a (native) savepoint; the peak RSS of the process tree over the whole job.

One JSON line per (backend, size) with every figure, then a last JSON line with the ratios
of each backend's largest size to the one before it (10 M / 1 M on RocksDB: checkpoint p50,
bytes p50, peak RSS; restore at the largest) and the goals judged on RocksDB's pair.

    python bench/state_scaling.py                       # RocksDB 100k, 1M, 10M; heap 100k, 1M
    python bench/state_scaling.py --backends rocksdb --sizes 1000000,10000000
    python bench/state_scaling.py --rate 20000 --steady-s 120 --interval-ms 2000
    python bench/state_scaling.py --quick               # 10k and 100k keys: about 2 minutes
    python bench/state_scaling.py --backends rocksdb --bytewax-sizes 100000,1000000,10000000
    python bench/state_scaling.py --backends "" --bytewax-sizes 100000,1000000   # Bytewax alone

``--bytewax-sizes`` adds, for comparison, Bytewax 0.21 writing each key once at those sizes
(``peers/bytewax_count.py``, N = K, 2 processes, a snapshot a second): its throughput, peak RSS
and recovery store, beside our load phase and peak RSS. Bytewax has no incremental checkpoint
to time or restore to measure the same way: its snapshots go to SQLite, once per epoch for
each key that changed.

Only one benchmark may run on the machine at a time. The 10 M case holds its state several
times on disk (RocksDB's working copy, its local recovery copy, the checkpoints, the final
savepoint) under the system temporary directory, removed when the case ends.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cloudpickle
import keyed_count
from chaos_faults import task_processes
from peak_rss import PeakRss, process_table, tree_pids
from recovery import RestartDelays

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common import RestartStrategies
from barrierflow.common.job_client import SavepointFormatType
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.base import SourceReader, SourceReaderContext, Split
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import MapFunction
from barrierflow.protocol.checkpoint_barrier import CheckpointKind

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
BACKENDS: dict[str, dict[str, Any]] = {
    "rocksdb": {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": True,
        "execution.state-recovery.from-local": True,
    },
    # the heap backend snapshots its whole table and restores from checkpoint storage
    "hashmap": {"state.backend.type": "hashmap"},
}
SIZES = {"rocksdb": [100_000, 1_000_000, 10_000_000], "hashmap": [100_000, 1_000_000]}
QUICK_SIZES = [10_000, 100_000]
GOAL_RATIO = 2.0  # 10 M against 1 M: checkpoint p50, bytes p50, peak RSS
GOAL_RESTORE_S = 3.0  # RocksDB with local recovery at 10 M keys, beyond the restart delay
PROGRESS_FILE = "progress.json"
LOADED_FILE = "loaded.json"


# --- the job (shipped to Spark's workers by value) -----------------------------------------


def update_key(update: int, keys: int, rate: int, window: int) -> int:
    """The key of the ``update``-th update: second ``update // rate`` goes to the window of
    ``window`` keys from ``second * window`` on (modulo ``keys``), its ``rate`` updates spread
    evenly over it (each key at most once when ``rate <= window``). Pure."""
    second, j = divmod(update, rate)
    offset = j * window // rate if rate <= window else j % window
    return (second * window + offset) % keys


def _write_json(path: str, data: dict) -> None:
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w") as f:
        json.dump(data, f)
    os.replace(partial, path)


class PacedSequence(NumberSequenceSource):
    """The indices 0, 1, 2, ... (``NumberSequenceSource(0, 2**62)``), the first ``keys`` as
    fast as the job takes them, the rest at ``rate`` a second: each poll returns what is due
    by then (none: the task waits for input or mail, 10 ms at most). A checkpoint's trigger,
    handled between two polls, so waits for a few milliseconds of records at most, where a
    pace inside a function chained to the source would hold it for a whole batch of 1,024
    records (about 100 ms at 10,000 a second, added to every checkpoint's duration). A
    restored reader paces anew from its first update."""

    def __init__(self, keys: int, rate: int) -> None:
        super().__init__(0, 2**62)
        self.keys = keys
        self.rate = rate

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return _PacedReader(super().create_reader(context), self.keys, self.rate)


class _PacedReader(SourceReader):
    def __init__(self, reader: SourceReader, keys: int, rate: int) -> None:
        self._reader = reader
        self._keys = keys
        self._rate = rate
        self._next: int | None = None  # the next index, once a poll told it
        self._paced_from: tuple[float, int] | None = None  # (monotonic time, index)

    def poll(self, max_records: int) -> list[Any] | None:
        if self._next is None:
            wanted = 1
        elif self._next < self._keys:  # the load, up to its last key
            wanted = min(max_records, self._keys - self._next)
        else:
            now = time.monotonic()
            if self._paced_from is None:
                self._paced_from = (now, self._next)
            started, base = self._paced_from
            due = base + int((now - started) * self._rate) + 1
            wanted = min(max_records, due - self._next)
            if wanted <= 0:
                return []
        found = self._reader.poll(wanted)
        if found:
            self._next = found[-1] + 1
        return found

    def start(self) -> None:
        self._reader.start()

    def add_splits(self, splits: list[Split]) -> None:
        self._reader.add_splits(splits)

    def notify_no_more_splits(self) -> None:
        self._reader.notify_no_more_splits()

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return self._reader.snapshot_state(checkpoint_id)

    def close(self) -> None:
        self._reader.close()


class Feed(MapFunction):
    """Index -> key: index i < K is key i (the load); the others are updates
    (``update_key``). Writes ``progress.json`` (updates so far, time) once per ``rate``
    updates, for the rate the job held."""

    def __init__(self, keys: int, rate: int, window: int, scratch: str) -> None:
        self.keys = keys
        self.rate = rate
        self.window = window
        self.progress = os.path.join(scratch, PROGRESS_FILE)

    def map(self, i):
        if i < self.keys:
            return i
        update = i - self.keys
        if update % self.rate == 0:
            _write_json(self.progress, {"updates": update, "t": time.time()})
        return update_key(update, self.keys, self.rate, self.window)


class Count(keyed_count.Count):
    """``keyed_count.py``'s count, which also tells the bench, through files in ``scratch``,
    which process runs it (``open-<attempt>-<subtask>.json``), when each instance processed
    its first record (``first-<attempt>-<subtask>.json``) and when the first attempt had
    processed the K records of the load (``loaded.json``)."""

    def __init__(self, keys: int, scratch: str) -> None:
        self.keys = keys
        self.scratch = scratch

    def open(self, runtime_context):
        super().open(runtime_context)
        self._seen = 0
        self._first_at = 0.0
        self._who = {
            "attempt": runtime_context.get_attempt_number(),
            "subtask": runtime_context.get_index_of_this_subtask(),
            "parallelism": runtime_context.get_number_of_parallel_subtasks(),
            "pid": os.getpid(),
        }
        self._write("open", time.time())

    def process_element(self, key, ctx):
        self._seen += 1
        if self._seen == 1 or self._seen == self.keys:
            self._stamp()
        return super().process_element(key, ctx)

    def _stamp(self) -> None:
        now = time.time()
        if self._seen == 1:
            self._first_at = now
            self._write("first", now)
        if self._seen == self.keys and self._who["attempt"] == 0:
            _write_json(
                os.path.join(self.scratch, LOADED_FILE), {"start": self._first_at, "end": now}
            )

    def _write(self, what: str, t: float) -> None:
        name = f"{what}-{self._who['attempt']}-{self._who['subtask']}.json"
        _write_json(os.path.join(self.scratch, name), {**self._who, "t": t})


cloudpickle.register_pickle_by_value(keyed_count)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def build(env: StreamExecutionEnvironment, backend: str, keys: int, opts: argparse.Namespace,
          work: str) -> None:  # fmt: skip
    """The job, unbounded in practice (2**62 indices): the bench ends it with a stop."""
    env.set_parallelism(1)
    env.configure({**BACKENDS[backend], "taskmanager.state.local.root-dirs": f"{work}/local"})
    env.enable_checkpointing(opts.interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(f"{work}/ckpt")
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, opts.restart_delay_ms))
    window = window_keys(keys, opts.change_fraction)
    scratch = f"{work}/scratch"
    # the source and the feed keep parallelism 1 of their own through the rescale: the
    # input stays one paced sequence, and the rescale moves the keyed count and its sink
    source = env.from_source(PacedSequence(keys, opts.rate), "events").set_parallelism(1)
    (
        source.uid("events")
        .map(Feed(keys, opts.rate, window, scratch))
        .set_parallelism(1)
        .uid("feed")
        .key_by(lambda k: k)
        .process(Count(keys, scratch))
        .uid("count")
        .sink_to(DiscardingSink())
        .uid("sink")
    )


def window_keys(keys: int, fraction: float) -> int:
    return max(1, round(keys * fraction))


# --- one case, in a child process ----------------------------------------------------------


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _stamps(scratch: str, what: str) -> list[dict]:
    found = (_read_json(p) for p in glob.glob(os.path.join(scratch, f"{what}-*.json")))
    return [s for s in found if s is not None]


def _wait(what: str, ready, timeout_s: float, client) -> Any:
    """Polls ``ready()`` until it returns something other than None."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = ready()
        if found is not None:
            return found
        if client.done():
            client.get_job_execution_result().result()  # raises what ended it
            raise RuntimeError(f"the job ended while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.05)


def _firsts(scratch: str, parallelism: int, after: float, count: int) -> list[dict] | None:
    """The first-record stamps of ``count`` keyed subtasks at ``parallelism`` after ``after``."""
    found = [
        s for s in _stamps(scratch, "first") if s["parallelism"] == parallelism and s["t"] > after
    ]
    return found if len(found) >= count else None


class Checkpoints:
    """The job's checkpoint records, read from its history file (which keeps the last 100)
    whenever ``poll`` is called, kept by id."""

    def __init__(self, job_dir: CheckpointDirectory) -> None:
        self._dir = job_dir
        self.records: dict[int, Any] = {}

    def poll(self) -> None:
        history = self._dir.read_history()
        for r in history.records if history is not None else ():
            self.records[r.checkpoint_id] = r

    def within(self, start: float, end: float) -> list:
        """The checkpoints triggered and ended between ``start`` and ``end`` (not one that the
        kill after ``end`` aborted)."""
        return [
            r
            for _, r in sorted(self.records.items())
            if start <= r.trigger_timestamp_ms / 1000
            and r.end_timestamp_ms / 1000 <= end
            and r.kind is CheckpointKind.CHECKPOINT
        ]

    def completed_after(self, t: float) -> bool:
        self.poll()
        return any(
            r.status.value == "COMPLETED" and r.trigger_timestamp_ms / 1000 > t
            for r in self.records.values()
        )


def nearest_rank(values: list[float], q: float) -> float | None:
    """The ``q`` quantile by nearest rank (p99 of fewer than 100 values: the largest). Pure."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def run_case(backend: str, keys: int, opts: argparse.Namespace) -> dict:
    work = tempfile.mkdtemp(prefix=f"barrierflow-state-scaling-{backend}-{keys}-")
    os.makedirs(f"{work}/scratch")
    try:
        return _run_case(backend, keys, opts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_case(backend: str, keys: int, opts: argparse.Namespace, work: str) -> dict:
    scratch = f"{work}/scratch"
    window = window_keys(keys, opts.change_fraction)
    env = StreamExecutionEnvironment()
    build(env, backend, keys, opts, work)
    delays = RestartDelays()
    logging.getLogger("barrierflow.jobmaster").addHandler(delays)
    started = time.monotonic()
    client = None
    try:
        with PeakRss() as rss:
            client = env.execute_async(f"state-scaling-{backend}-{keys}")
            checkpoints = Checkpoints(CheckpointDirectory(f"{work}/ckpt/{client.get_job_id()}"))
            # 1. the load
            loaded = _wait(
                "the load",
                lambda: _read_json(os.path.join(scratch, LOADED_FILE)),
                300 + keys / 10_000,
                client,
            )
            load_s = loaded["end"] - loaded["start"]
            _say(f"{backend} {keys:,}: loaded in {load_s:.1f} s; steady phase")
            # 2. the steady phase
            time.sleep(opts.warmup_s)
            steady_from = time.time()
            progress_from = _read_json(os.path.join(scratch, PROGRESS_FILE))
            with PeakRss() as steady_rss:
                while (left := steady_from + opts.steady_s - time.time()) > 0:
                    checkpoints.poll()
                    time.sleep(min(left, 5.0))
            steady_to = time.time()
            progress_to = _read_json(os.path.join(scratch, PROGRESS_FILE))
            checkpoints.poll()
            # 3. the kill
            opened = [s for s in _stamps(scratch, "open") if s["parallelism"] == 1]
            pid = max(opened, key=lambda s: s["attempt"])["pid"]
            if pid not in tree_pids(process_table(), [os.getpid()]):
                raise RuntimeError(f"the keyed count's process {pid} is not this job's")
            among_tasks = pid in task_processes(os.getpid())
            killed_at = time.time()
            os.kill(pid, signal.SIGKILL)
            _say(f"{backend} {keys:,}: killed the keyed count's process {pid}")
            (recovered,) = _wait(
                "the recovered attempt's first record",
                lambda: _firsts(scratch, 1, killed_at, 1),
                600,
                client,
            )
            _wait(
                "a checkpoint after the recovery",
                lambda: True if checkpoints.completed_after(recovered["t"]) else None,
                600,
                client,
            )
            time.sleep(opts.settle_s)
            # 4. the rescale
            _say(f"{backend} {keys:,}: recovered; rescaling 1 -> 2")
            requested = time.time()
            record = client.rescale(2).result(900)
            if record.status.value != "COMPLETED":
                raise RuntimeError(f"the rescale ended {record.status.value}: {record.detail}")
            rescaled = _wait(
                "both rescaled keyed subtasks' first records",
                lambda: _firsts(scratch, 2, requested, 2),
                600,
                client,
            )
            time.sleep(opts.settle_s)
            # 5. the end
            client.stop_with_savepoint(
                False, f"{work}/savepoints", SavepointFormatType.NATIVE
            ).result(1800)
            result = client.get_job_execution_result().result()
    finally:
        logging.getLogger("barrierflow.jobmaster").removeHandler(delays)
        if client is not None and not client.done():
            client.cancel()
    steady = checkpoints.within(steady_from, steady_to)
    completed = [r for r in steady if r.status.value == "COMPLETED"]
    durations = [r.duration_ms for r in completed]
    written = [r.checkpointed_size for r in completed]
    recovery = min(
        (r for r in result.recoveries if r.failed_at is not None and r.failed_at > killed_at),
        key=lambda r: r.attempt,
    )
    rescale_attempt = max(r.attempt for r in result.recoveries)
    restores = {r.attempt: r for r in result.restores}
    delay_s = delays.delays[0] if delays.delays else opts.restart_delay_ms / 1000
    steady_rate = None
    if progress_from and progress_to and progress_to["t"] > progress_from["t"]:
        steady_rate = (progress_to["updates"] - progress_from["updates"]) / (
            progress_to["t"] - progress_from["t"]
        )
    return {
        "benchmark": "state_scaling",
        "backend": backend,
        "keys": keys,
        "incremental": BACKENDS[backend].get("execution.checkpointing.incremental", False),
        "local_recovery": BACKENDS[backend].get("execution.state-recovery.from-local", False),
        "rate_per_s": opts.rate,
        "window_keys": window,
        "keys_changed_per_s": min(opts.rate, window),
        "interval_ms": opts.interval_ms,
        "load_s": round(load_s, 2),
        "load_keys_per_s": round(keys / load_s) if load_s > 0 else None,
        "steady_s": round(steady_to - steady_from, 1),
        "steady_updates_per_s": round(steady_rate) if steady_rate is not None else None,
        "checkpoints": len(completed),
        "checkpoints_failed": len(steady) - len(completed),
        "checkpoint_ms_p50": _round(statistics.median(durations) if durations else None, 1),
        "checkpoint_ms_p99": _round(nearest_rank(durations, 0.99), 1),
        "checkpoint_bytes_p50": _round(statistics.median(written) if written else None),
        "checkpoint_bytes_p99": nearest_rank(written, 0.99),
        "checkpoint_bytes_mean": _round(statistics.mean(written) if written else None),
        "state_bytes": completed[-1].state_size if completed else None,
        "restart_delay_s": delay_s,
        "restarts": len(delays.delays),
        "killed_task_process": among_tasks,
        "restore_s": round(recovered["t"] - killed_at - delay_s, 3),
        "restore_any_subtask_s": _round(
            recovery.first_record_at - killed_at - delay_s
            if recovery.first_record_at is not None
            else None,
            3,
        ),
        "restore_slowest_subtask_ms": _restore_figure(restores, recovery.attempt, "ms"),
        "restore_bytes_read": _restore_figure(restores, recovery.attempt, "bytes"),
        "rescale_downtime_s": _round(
            record.downtime_ms / 1000 if record.downtime_ms is not None else None, 3
        ),
        "rescale_s": round(max(s["t"] for s in rescaled) - requested, 3),
        "rescale_restore_slowest_subtask_ms": _restore_figure(restores, rescale_attempt, "ms"),
        "rescale_bytes_read": _restore_figure(restores, rescale_attempt, "bytes"),
        "peak_rss_mib": rss.peak_mib,
        "steady_peak_rss_mib": steady_rss.peak_mib,
        "wall_s": round(time.monotonic() - started, 1),
    }


def _restore_figure(restores: dict, attempt: int, which: str) -> float | int | None:
    r = restores.get(attempt)
    if r is None:
        return None
    return round(r.max_restore_ms, 1) if which == "ms" else r.bytes_read


def _round(value: float | None, digits: int | None = None) -> float | int | None:
    return None if value is None else round(value, digits)


# --- the cases and the ratios --------------------------------------------------------------


def _ratio(big: float | None, small: float | None) -> float | None:
    return round(big / small, 3) if big is not None and small else None


def ratios(lines: list[dict]) -> dict:
    """Per backend, its largest size's figures against the next size down, and the goals
    judged on RocksDB's pair (they are set for 10 M against 1 M). Pure."""
    found: dict[str, Any] = {"benchmark": "state_scaling", "ratios": {}, "goals": None}
    for backend in dict.fromkeys(line["backend"] for line in lines if "error" not in line):
        rows = sorted(
            (line for line in lines if line["backend"] == backend and "error" not in line),
            key=lambda line: line["keys"],
        )
        if len(rows) < 2:
            continue
        small, big = rows[-2], rows[-1]
        pair = {
            "keys": [big["keys"], small["keys"]],
            **{
                name: _ratio(big[name], small[name])
                for name in ("checkpoint_ms_p50", "checkpoint_bytes_p50", "peak_rss_mib")
            },
            "restore_s_largest": big["restore_s"],
        }
        found["ratios"][backend] = pair
        if backend == "rocksdb":
            found["goals"] = {
                "keys": pair["keys"],
                "as_set": pair["keys"] == [10_000_000, 1_000_000],
                **{
                    f"{name}_within_{GOAL_RATIO:g}x": pair[name] is not None
                    and pair[name] <= GOAL_RATIO
                    for name in ("checkpoint_ms_p50", "checkpoint_bytes_p50", "peak_rss_mib")
                },
                f"restore_within_{GOAL_RESTORE_S:g}s": big["restore_s"] <= GOAL_RESTORE_S,
            }
    return found


def _child_command(backend: str, keys: int, opts: argparse.Namespace) -> list[str]:
    command = [sys.executable, str(Path(__file__).resolve()), "--case", f"{backend}:{keys}"]
    for name in ("rate", "change_fraction", "interval_ms", "steady_s", "warmup_s", "settle_s",
                 "restart_delay_ms"):  # fmt: skip
        command += [f"--{name.replace('_', '-')}", str(getattr(opts, name))]
    return command


def run_all(opts: argparse.Namespace, cases: list[tuple[str, int]]) -> int:
    lines = []
    failed = 0
    for backend, keys in cases:
        _say(f"{backend} {keys:,}: starting")
        done = subprocess.run(_child_command(backend, keys, opts), stdout=subprocess.PIPE,
                              text=True, cwd=ROOT, env=os.environ)  # fmt: skip
        out = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode == 0 and out:
            line = json.loads(out[-1])
        else:
            failed += 1
            line = {"benchmark": "state_scaling", "backend": backend, "keys": keys,
                    "error": f"exit code {done.returncode}; its standard error above"}  # fmt: skip
        print(json.dumps(line), flush=True)
        lines.append(line)
    for keys in opts.bytewax_sizes:
        _say(f"bytewax {keys:,}: starting")
        line = bytewax_load(keys)
        failed += "error" in line
        print(json.dumps(line), flush=True)
    print(json.dumps({**ratios(lines), "quick": opts.quick}), flush=True)
    return 1 if failed else 0


def bytewax_load(keys: int) -> dict:
    """Bytewax 0.21 writing each of ``keys`` keys once (``peers/bytewax_count.py`` with N = K,
    2 processes, a snapshot every second): its throughput, peak RSS and the size of its
    recovery store at the end, beside our load phase (at parallelism 1) and peak RSS."""
    command = [sys.executable, str(BENCH / "peers" / "bytewax_count.py")]
    done = subprocess.run([*command, "--events", str(keys), "--keys", str(keys)],
                          stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    out = [line for line in done.stdout.splitlines() if line.startswith("{")]
    base = {"benchmark": "state_scaling", "peer": "bytewax", "keys": keys}
    if done.returncode != 0 or not out:
        return {**base, "error": f"exit code {done.returncode}; its standard error above"}
    figures = json.loads(out[-1])
    return {
        **base,
        "version": figures["version"],
        "processes": figures["parallelism"],
        "load_s": figures["processing_s"],
        "load_keys_per_s": figures["events_per_s"],
        "peak_rss_mib": figures["peak_rss_mib"],
        "recovery_mib": figures["recovery_mib"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument(
        "--sizes", help="key counts, comma-separated, for every backend (default: per backend)"
    )
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--rate", type=int, default=10_000, help="updates a second, every size")
    parser.add_argument(
        "--change-fraction", type=float, default=0.01, help="of the keys: each second's window"
    )
    parser.add_argument("--interval-ms", type=int, default=1000, help="checkpoint interval")
    parser.add_argument("--steady-s", type=float, help="steady phase (default 60; quick 8)")
    parser.add_argument("--warmup-s", type=float, help="after the load (default 5; quick 2)")
    parser.add_argument(
        "--settle-s", type=float, help="after the recovery, the rescale (default 3; quick 2)"
    )
    parser.add_argument("--restart-delay-ms", type=int, default=200)
    parser.add_argument(
        "--quick", action="store_true", help="10k and 100k keys, short phases: a smoke run"
    )
    parser.add_argument(
        "--bytewax-sizes",
        default="",
        help="key counts, comma-separated, at which Bytewax writes each key once, to compare",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)  # BACKEND:KEYS, in a child process
    opts = parser.parse_args()
    opts.bytewax_sizes = [int(k) for k in opts.bytewax_sizes.split(",") if k.strip()]
    for name, full, quick in (("steady_s", 60.0, 8.0), ("warmup_s", 5.0, 2.0),
                              ("settle_s", 3.0, 2.0)):  # fmt: skip
        if getattr(opts, name) is None:
            setattr(opts, name, quick if opts.quick else full)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Python workers import keyed_count (the count's base class) as the driver does
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BENCH), str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    if opts.case:
        backend, keys = opts.case.split(":")
        print(json.dumps(run_case(backend, int(keys), opts)), flush=True)
        return
    cases = []
    for backend in filter(None, opts.backends.split(",")):  # "": Bytewax's sizes alone
        if backend not in BACKENDS:
            parser.error(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
        if opts.sizes:
            sizes = sorted(int(s) for s in opts.sizes.split(","))
        else:
            sizes = QUICK_SIZES if opts.quick else SIZES[backend]
        cases += [(backend, keys) for keys in sizes]
    sys.exit(run_all(opts, cases))


if __name__ == "__main__":
    main()
