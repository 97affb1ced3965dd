"""Recovery time after a killed task process, alone: a long keyed running sum on local Spark,
SIGKILLed ``--kills`` times (a random task process each time, once the previous recovery took
its first checkpoint), for the heap backend and for RocksDB with incremental checkpoints and
local recovery.

Per kill: the time from the kill to the first record processed by the attempt that recovered
(the tasks' first-record timestamps) and to the first checkpoint completed after it, and where
the first of these goes (``PHASES``). Printed:
median and p99 of each, and the same beyond the configured restart delay, which is reported
apart (it is a setting, not work):

    python bench/recovery.py                         # 20 kills per backend, delay 200 ms
    python bench/recovery.py --kills 5 --backends hashmap --restart-delay-ms 0
    python bench/recovery.py --default-strategy --kills 3 --jobs 5   # Flink's default

``--default-strategy`` leaves the restart strategy to the configuration's default, Flink's
exponential delay (1 s, then x1.5 each restart, +-10 % jitter): its delays grow, so it takes a
few kills per job over several jobs (``--jobs``). The delay subtracted is each restart's own,
as the JobMaster logs it.

The last line is JSON with every figure. Only one benchmark may run on the machine at a time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos_faults import task_processes

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even

BACKENDS = {
    "hashmap": {},
    "rocksdb-local": {
        "execution.checkpointing.incremental": True,
        "execution.state-recovery.from-local": True,
    },
}


# Where a recovery's time goes, per kill: the kill to the JobMaster seeing the attempt fail;
# that to the next attempt's submission, less the restart delay (the old attempt's teardown);
# the submission to its first record (scheduling the barrier stage, starting its Python
# workers, importing, restoring state).
PHASES = ("detect_s", "resubmit_s", "start_s")


def _completed_after(storage: CheckpointDirectory, since: float) -> bool:
    history = storage.read_history()
    return history is not None and any(
        r.status.value == "COMPLETED" and r.trigger_timestamp_ms / 1000 > since
        for r in history.records
    )


class RestartDelays(logging.Handler):
    """The delay before each restart, as the JobMaster logs it (its exact value)."""

    def __init__(self) -> None:
        super().__init__()
        self.delays: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("Attempt %d failed") and record.args:
            self.delays.append(float(record.args[2]))


def measure(
    backend: str, kills: int, delay_ms: int | None, work: str, seed: int, interval_ms: int
) -> dict:
    """Runs the job, kills it ``kills`` times, stops it; the per-kill figures. ``delay_ms``
    None: the default restart strategy."""
    base = tempfile.mkdtemp(prefix=f"recovery-{backend}-", dir=work)
    env = StreamExecutionEnvironment().set_parallelism(2)
    conf = {**BACKENDS[backend], "taskmanager.state.local.root-dirs": f"{base}/local"}
    odd_even.build(
        env, 10**9, f"{base}/out", f"{base}/ckpt", interval_ms=interval_ms, delay_s=0.0005,
        source_parallelism=1, state_backend=backend.split("-")[0], conf=conf,
    )  # fmt: skip
    if delay_ms is None:
        env.set_restart_strategy(RestartStrategies.fall_back_restart())
    else:
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(kills + 5, delay_ms))
    delays = RestartDelays()
    logging.getLogger("barrierflow.jobmaster").addHandler(delays)
    try:
        client = env.execute_async(f"recovery-{backend}")
        killed_at, reused = _kill(client, base, kills, random.Random(seed))
        client.stop_with_savepoint(False, f"{base}/savepoints").result()
        result = client.get_job_execution_result().result()
    finally:
        logging.getLogger("barrierflow.jobmaster").removeHandler(delays)
    found: dict[str, list[float]] = {
        name: [] for name in (*PHASES, "record_s", "checkpoint_s", "delay_s", "beyond_delay_s")
    }
    for kill in killed_at:
        after = [r for r in result.recoveries if r.submitted_at > kill]
        if not after:
            continue
        r = after[0]
        delay_s = delays.delays[r.attempt - 2]  # attempt N follows the (N-1)th failure
        found["delay_s"].append(delay_s)
        if r.first_record_at is not None:
            found["record_s"].append(r.first_record_at - kill)
            found["beyond_delay_s"].append(r.first_record_at - kill - delay_s)
        if r.first_checkpoint_at is not None:
            found["checkpoint_s"].append(r.first_checkpoint_at - kill)
        if r.failed_at is not None and r.first_record_at is not None:
            found["detect_s"].append(r.failed_at - kill)
            found["resubmit_s"].append(r.submitted_at - r.failed_at - delay_s)
            found["start_s"].append(r.first_record_at - r.submitted_at)
    return {"backend": backend, "kills": len(killed_at), "reused": reused, **found}


def _kill(client, base: str, kills: int, rng: random.Random) -> tuple[list[float], list[float]]:
    """Kills a random task process ``kills`` times, each once records flow again after the
    recovery before it took its first checkpoint; the kill times, and per recovery how many
    of its task processes the attempt before it had run (Spark reuses an idle Python worker;
    a new one is forked and imports the task runtime)."""
    storage = CheckpointDirectory(f"{base}/ckpt/{client.get_job_id()}")
    killed_at: list[float] = []
    reused: list[float] = []
    before: list[int] = []
    since = 0.0
    while len(killed_at) < kills and not client.done():
        if not _completed_after(storage, since):
            time.sleep(0.02)
            continue
        time.sleep(0.3)  # records flow again, as they would before a real failure
        pids = task_processes(os.getpid())
        if not pids:
            continue
        if before:
            reused.append(len(set(before) & set(pids)))
        before = pids
        killed_at.append(time.time())
        os.kill(rng.choice(pids), 9)
        since = killed_at[-1]
    while not _completed_after(storage, since) and not client.done():
        time.sleep(0.05)  # the last recovery's first checkpoint
    pids = task_processes(os.getpid())
    if before and pids:
        reused.append(len(set(before) & set(pids)))
    return killed_at, reused


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="per job")
    parser.add_argument("--jobs", type=int, default=1, help="jobs per backend")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--restart-delay-ms", type=int, default=200)
    parser.add_argument(
        "--default-strategy", action="store_true", help="the default restart strategy"
    )
    parser.add_argument("--interval-ms", type=int, default=100, help="checkpoint interval")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="barrierflow-recovery-")
    delay_ms = None if args.default_strategy else args.restart_delay_ms
    strategy = "the default strategy" if delay_ms is None else f"restart delay {delay_ms} ms"
    figures = []
    for backend in args.backends.split(","):
        m: dict[str, list[float]] = {}
        for job in range(args.jobs):
            one = measure(backend, args.kills, delay_ms, work, args.seed + job, args.interval_ms)
            for name, values in one.items():
                if isinstance(values, list):
                    m.setdefault(name, []).extend(values)
        row: dict = {"backend": backend, "kills": len(m["record_s"]), "strategy": strategy}
        row["workers_reused_mean"] = (
            round(statistics.mean(m["reused"]), 2) if m.get("reused") else None
        )
        for name in ("record_s", "checkpoint_s", "beyond_delay_s", "delay_s", *PHASES):
            values = m[name]
            row[f"{name}_median"] = round(statistics.median(values), 3) if values else None
            row[f"{name}_p99"] = round(_p(values, 0.99), 3) if values else None
        row["beyond_delay_s"] = [round(v, 3) for v in m["beyond_delay_s"]]
        figures.append(row)
        print(
            f"{backend}: {row['kills']} kills, {strategy} (median delay {row['delay_s_median']} "
            f"s); kill -> first record: median {row['record_s_median']} s, p99 "
            f"{row['record_s_p99']} s; beyond each restart's delay: median "
            f"{row['beyond_delay_s_median']} s, p99 {row['beyond_delay_s_p99']} s; kill -> "
            f"first checkpoint: median {row['checkpoint_s_median']} s; medians of kill -> "
            f"failure seen {row['detect_s_median']} s, teardown and resubmission beyond the "
            f"delay {row['resubmit_s_median']} s, submission -> first record "
            f"{row['start_s_median']} s; task processes of the attempt before, per "
            f"recovery: {row['workers_reused_mean']}",
            flush=True,
        )
    print(json.dumps({"benchmark": "recovery", "figures": figures}))


if __name__ == "__main__":
    main()
