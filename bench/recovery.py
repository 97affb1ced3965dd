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

The last line is JSON with every figure. Only one benchmark may run on the machine at a time.
"""

from __future__ import annotations

import argparse
import json
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


def measure(backend: str, kills: int, delay_ms: int, work: str, seed: int) -> dict:
    """Runs the job, kills it ``kills`` times, stops it; the per-kill figures."""
    rng = random.Random(seed)
    base = tempfile.mkdtemp(prefix=f"recovery-{backend}-", dir=work)
    env = StreamExecutionEnvironment().set_parallelism(2)
    conf = {**BACKENDS[backend], "taskmanager.state.local.root-dirs": f"{base}/local"}
    odd_even.build(
        env, 10**9, f"{base}/out", f"{base}/ckpt", interval_ms=100, delay_s=0.0005,
        source_parallelism=1, state_backend=backend.split("-")[0], conf=conf,
    )  # fmt: skip
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(kills + 5, delay_ms))
    client = env.execute_async(f"recovery-{backend}")
    storage = CheckpointDirectory(f"{base}/ckpt/{client.get_job_id()}")
    killed_at: list[float] = []
    since = 0.0
    while len(killed_at) < kills and not client.done():
        if not _completed_after(storage, since):
            time.sleep(0.02)
            continue
        time.sleep(0.3)  # records flow again, as they would before a real failure
        pids = task_processes(os.getpid())
        if not pids:
            continue
        killed_at.append(time.time())
        os.kill(rng.choice(pids), 9)
        since = killed_at[-1]
    while not _completed_after(storage, since) and not client.done():
        time.sleep(0.05)  # the last recovery's first checkpoint
    client.stop_with_savepoint(False, f"{base}/savepoints").result()
    result = client.get_job_execution_result().result()
    found: dict[str, list[float]] = {name: [] for name in (*PHASES, "record_s", "checkpoint_s")}
    for kill in killed_at:
        after = [r for r in result.recoveries if r.submitted_at > kill]
        if not after:
            continue
        r = after[0]
        if r.first_record_at is not None:
            found["record_s"].append(r.first_record_at - kill)
        if r.first_checkpoint_at is not None:
            found["checkpoint_s"].append(r.first_checkpoint_at - kill)
        if r.failed_at is not None and r.first_record_at is not None:
            found["detect_s"].append(r.failed_at - kill)
            found["resubmit_s"].append(r.submitted_at - r.failed_at - delay_ms / 1000)
            found["start_s"].append(r.first_record_at - r.submitted_at)
    return {"backend": backend, "kills": len(killed_at), **found}


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--restart-delay-ms", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="barrierflow-recovery-")
    delay_s = args.restart_delay_ms / 1000
    figures = []
    for backend in args.backends.split(","):
        m = measure(backend, args.kills, args.restart_delay_ms, work, args.seed)
        row = {"backend": backend, "kills": m["kills"], "restart_delay_s": delay_s}
        for name in ("record_s", "checkpoint_s"):
            values = m[name]
            row[f"{name}_median"] = round(statistics.median(values), 3) if values else None
            row[f"{name}_p99"] = round(_p(values, 0.99), 3) if values else None
            row[f"{name}_median_beyond_delay"] = (
                round(statistics.median(values) - delay_s, 3) if values else None
            )
        for name in PHASES:
            row[f"{name}_median"] = round(statistics.median(m[name]), 3) if m[name] else None
        figures.append(row)
        print(
            f"{backend}: {m['kills']} kills, restart delay {delay_s:.2f} s; kill -> first record: "
            f"median {row['record_s_median']} s, p99 {row['record_s_p99']} s "
            f"({row['record_s_median_beyond_delay']} s beyond the delay); kill -> first "
            f"checkpoint: median {row['checkpoint_s_median']} s, p99 {row['checkpoint_s_p99']} s; "
            f"medians of kill -> failure seen {row['detect_s_median']} s, teardown and "
            f"resubmission beyond the delay {row['resubmit_s_median']} s, submission -> first "
            f"record {row['start_s_median']} s",
            flush=True,
        )
    print(json.dumps({"benchmark": "recovery", "figures": figures}))


if __name__ == "__main__":
    main()
