"""The downtime of a rescale of a running job, as issue 36 defines it: the largest gap, in
processing time, between records that reach the sink's committed output around the rescale.

The job (``rescale_job.py``) is a keyed running count over K keys whose every record carries
the time it was processed at and the parallelism that processed it, into an exactly-once
``FileSink``. The gap is read from the committed records alone: it covers the checkpoint taken
for the rescale, the stop, the new barrier stage and the restore, and a record processed but
not committed (after the rescale's checkpoint, by the attempt that stopped) does not hide it.
Each case is its own option:

- ``heap``: 100,000 keys on the heap backend, rescaled by hand 1 -> 2 -> 1 on ``local[2]``
  (``JobClient.rescale``), ``--rescales`` times each way;
- ``rocksdb``: the same with 2,000,000 keys on RocksDB with incremental checkpoints;
- ``reactive``: the heap job in reactive mode on a Spark standalone cluster of two one-core
  workers; one worker SIGKILLed (its executor lost), ``--rescales`` times, a worker added
  again after each loss (the job scales back up after the stabilization time). Per loss: the
  time from the kill to the first committed record processed at the lower parallelism.

Per rescale it also prints the downtime the job's rescale history reports (from the stop to
the first record), which the committed gap should match. Figures are medians and p99 over the
rescales of one run; p99 is by nearest rank, so of 10 rescales it is the largest. Every run ends
with a stop with a savepoint and checks its committed output record by record against what a
failure-free run commits (``scale_figures.check_keyed_counts``): a wrong output fails the run,
a slow one does not.

    python bench/rescale.py heap                   # 10 rescales each way
    python bench/rescale.py rocksdb
    python bench/rescale.py reactive
    python bench/rescale.py heap rocksdb reactive --quick   # 2 each, smaller state: a smoke run

Each of the reactive case's losses is a task failure (SIGKILLed executors), so it goes through
the restart strategy: under Flink's default, exponential delay, the delay grows by 1.5x with
each loss until an hour passes without one, and ten losses in a few minutes measure the backoff
more than the rescale. ``-D KEY=VALUE`` sets a configuration key for every case's job, e.g. a
fixed delay to measure each loss alone:

    python bench/rescale.py reactive -D restart-strategy.type=fixed-delay \
        -D restart-strategy.fixed-delay.attempts=100 -D restart-strategy.fixed-delay.delay=1s

The last line is JSON with every figure. Only one benchmark may run on the machine at a time.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rescale_job
from job_rest import job_address, rescale_history, rescale_history_after
from scale_figures import check_keyed_counts, largest_gap, median_p99

from barrierflow.datastream import StreamExecutionEnvironment
from tests.servers.spark_standalone import StandaloneCluster, standalone_cluster

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass(frozen=True)
class Case:
    keys: int
    quick_keys: int
    backend: str
    conf: dict
    goal_s: float


CASES = {
    "heap": Case(100_000, 20_000, "hashmap", {}, 2.0),
    "rocksdb": Case(
        2_000_000, 200_000, "rocksdb", {"execution.checkpointing.incremental": True}, 5.0
    ),
    "reactive": Case(100_000, 20_000, "hashmap", {}, 10.0),
}
RATE = 4000  # values a second once the keys are filled: the output stays small
SETTLE_S = 3.0  # records flow at a parallelism this long before the next rescale
STABILIZATION_S = 2.0  # reactive mode's, before it scales up to a worker added


# --- the job's REST API and output ---------------------------------------------------------


def newest_committed(out_dir: str) -> list | None:
    """The last record of the newest committed part file: how far the output got."""
    parts = glob.glob(os.path.join(out_dir, "part-*"))
    for path in sorted(parts, key=os.path.getmtime, reverse=True)[:3]:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = f.read().splitlines()
        if lines:
            return json.loads(lines[-1])
    return None


def wait_until(what: str, ready: Callable[[], bool], timeout_s: float, alive=None) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if alive is not None and not alive():
            raise RuntimeError(f"the job ended while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.2)


def wait_for_output(out_dir: str, beyond_value: int, parallelism: int, timeout_s: float,
                    alive=None) -> None:  # fmt: skip
    """Until a committed record beyond ``beyond_value`` was processed at ``parallelism``."""

    def ready() -> bool:
        last = newest_committed(out_dir)
        return last is not None and last[1] > beyond_value and last[4] == parallelism

    wait_until(f"committed records at parallelism {parallelism}", ready, timeout_s, alive)


# Configuration keys given with -D, for every case's job.
DEFINED: dict[str, str] = {}


# --- by hand, on local[2] ------------------------------------------------------------------


def run_by_hand(name: str, case: Case, keys: int, rescales: int, work: str) -> dict:
    """The job on the embedded ``local[2]``, rescaled 1 -> 2 -> 1 ``rescales`` times each
    way through ``JobClient.rescale``; then stopped with a savepoint."""
    base = tempfile.mkdtemp(prefix=f"rescale-{name}-", dir=work)
    out, ckpt = f"{base}/out", f"{base}/ckpt"
    env = StreamExecutionEnvironment().set_parallelism(1)
    conf = {**case.conf, **DEFINED, "rest.port": 0}
    rescale_job.build(env, keys, out, ckpt, RATE, state_backend=case.backend, conf=conf)
    client = env.execute_async(f"rescale-{name}")
    job_id, url, _ = job_address(ckpt)
    alive = lambda: not client.done()  # noqa: E731
    wait_for_output(out, keys, 1, 600, alive)
    print(f"{name}: {keys:,} keys filled; rescaling", flush=True)
    for i in range(2 * rescales):
        time.sleep(SETTLE_S)
        target = 2 if i % 2 == 0 else 1
        record = client.rescale(target).result()
        print(f"  {_describe(record)}", flush=True)
        wait_for_output(out, keys, target, 120, alive)
    time.sleep(SETTLE_S)
    client.stop_with_savepoint(False, f"{base}/savepoints").result()
    history = rescale_history_after(client, url, job_id)
    return _figures(name, case, keys, out, history, kills=None, base=base)


# --- reactive, on a standalone cluster -----------------------------------------------------

REACTIVE_JOB = """
import sys
sys.path.insert(0, {bench!r})
import rescale_job
from job_rest import job_address, rescale_history, rescale_history_after
from barrierflow.datastream import StreamExecutionEnvironment

base, keys = sys.argv[1], int(sys.argv[2])
env = StreamExecutionEnvironment().set_parallelism(2)
rescale_job.build(env, keys, f"{{base}}/out", f"{{base}}/ckpt", {rate})
env.execute("rescale-reactive")
"""


def run_reactive(case: Case, keys: int, losses: int, work: str) -> dict:
    """The job in reactive mode on two one-core workers; a worker SIGKILLed ``losses``
    times, one added after each loss; then stopped with a savepoint."""
    base = tempfile.mkdtemp(prefix="rescale-reactive-", dir=work)
    job = Path(base, "job.py")
    job.write_text(textwrap.dedent(REACTIVE_JOB.format(bench=str(BENCH), rate=RATE)))
    with standalone_cluster(workers=2) as cluster, open(f"{base}/driver.log", "wb") as log:
        driver = subprocess.Popen(
            _reactive_command(cluster, job, base, keys), env=_driver_env(cluster, base),
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            kills = _lose_executors(cluster, driver, base, keys, losses)
            _cli("stop", kills["job_id"], "--checkpoint-dir", f"{base}/ckpt",
                 "-p", f"{base}/savepoints", env=_driver_env(cluster, base))  # fmt: skip
            if driver.wait(300) != 0:
                raise RuntimeError(Path(base, "driver.log").read_text()[-3000:])
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait(30)
    return _figures("reactive", case, keys, f"{base}/out", kills["history"], kills["at"], base)


def _reactive_command(cluster: StandaloneCluster, job: Path, base: str, keys: int) -> list[str]:
    return [
        sys.executable, "-m", "barrierflow.cli", "run", "--master", cluster.master_url,
        "--conf", "spark.executor.memory=1g",
        "--conf", f"spark.executorEnv.PYTHONPATH={BENCH}{os.pathsep}{ROOT}",
        "-D", "scheduler-mode=reactive",
        "-D", f"jobmanager.adaptive-scheduler.resource-stabilization-timeout={STABILIZATION_S}s",
        *(a for key, value in DEFINED.items() for a in ("-D", f"{key}={value}")),
        "-D", "rest.port=0", str(job), "--", base, str(keys),
    ]  # fmt: skip


def _driver_env(cluster: StandaloneCluster, base: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
           "SPARK_HOME": cluster.spark_home, "SPARK_LOCAL_IP": "127.0.0.1",
           "BARRIERFLOW_HOME": f"{base}/home"}  # fmt: skip
    env.pop("PYSPARK_GATEWAY_PORT", None)
    return env


def _cli(*args: str, env: dict) -> None:
    done = subprocess.run([sys.executable, "-m", "barrierflow.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"barrierflow {' '.join(args)}: {done.stderr[-2000:]}")


def _lose_executors(cluster: StandaloneCluster, driver: subprocess.Popen, base: str, keys: int,
                    losses: int) -> dict:  # fmt: skip
    """Kills a worker ``losses`` times, each once the job ran at 2 for a while; adds one
    after each loss and waits for the job to scale back up to it."""
    out = f"{base}/out"
    job_id, url, _ = job_address(f"{base}/ckpt")
    alive = lambda: driver.poll() is None  # noqa: E731
    wait_for_output(out, keys, 2, 600, alive)
    print(f"reactive: {keys:,} keys filled at parallelism 2; losing executors", flush=True)
    killed_at = []
    for _ in range(losses):
        time.sleep(SETTLE_S)
        done = len(_completed(url, job_id))
        victim = len(cluster.workers) - 1  # the newest worker runs one of the two slots
        cluster.kill_worker(victim)
        killed_at.append(time.time())
        down = _wait_for_rescale(url, job_id, done + 1, alive)
        print(f"  worker {victim} killed: {_describe(down)}", flush=True)
        wait_for_output(out, keys, 1, 120, alive)
        cluster.add_worker()
        up = _wait_for_rescale(url, job_id, done + 2, alive)
        print(f"  a worker added: {_describe(up)}", flush=True)
        wait_for_output(out, keys, 2, 120, alive)
    time.sleep(SETTLE_S)
    return {"job_id": job_id, "at": killed_at, "history": rescale_history(url, job_id)}


def _completed(url: str, job_id: str) -> list[dict]:
    return [r for r in rescale_history(url, job_id) if r["status"] not in ("IN_PROGRESS",)]


def _wait_for_rescale(url: str, job_id: str, count: int, alive) -> dict:
    found: list[dict] = []

    def ready() -> bool:
        found[:] = _completed(url, job_id)
        return len(found) >= count

    wait_until(f"rescale {count}", ready, 300, alive)
    return found[count - 1]


# --- the figures ---------------------------------------------------------------------------


def _figures(name: str, case: Case, keys: int, out: str, history: list[dict],
             kills: list[float] | None, base: str) -> dict:  # fmt: skip
    """Checks the committed output, then reads each rescale's gap from it."""
    records = rescale_job.read_committed(out)
    checked = check_keyed_counts(records, keys)
    stamps = sorted(r[3] for r in records)
    done = [r for r in history if r["status"] == "COMPLETED"]
    rows = []
    for r in done:
        start, end = r["requested_ms"] / 1000, r["ended_ms"] / 1000
        gap = largest_gap(stamps, start, end)
        to = max(r["to_parallelism"].values())
        rows.append({"from": max(r["from_parallelism"].values()), "to": to,
                     "trigger": r["trigger"], "gap_s": round(gap.seconds, 3) if gap else None,
                     "reported_downtime_s": _seconds(r.get("downtime_ms"))})  # fmt: skip
    figures: dict = {"case": name, "keys": keys, "records_checked": checked, "rescales": rows,
                     "goal_s": case.goal_s, "exactly_once": True}  # fmt: skip
    for direction, label in (((1, 2), "up"), ((2, 1), "down")):
        gaps = [r["gap_s"] for r in rows if (r["from"], r["to"]) == direction and r["gap_s"]]
        figures[f"{label}_gap_s"] = _summary(gaps)
        reported = [
            r["reported_downtime_s"]
            for r in rows
            if (r["from"], r["to"]) == direction and r["reported_downtime_s"] is not None
        ]
        figures[f"{label}_reported_s"] = _summary(reported)
    if kills is not None:
        figures["loss_to_lower_s"] = _summary(_loss_to_lower(records, kills))
    figures["steady_gap_s"] = _steady_gap(stamps, done, keys, records)
    shutil.rmtree(base, ignore_errors=True)
    return figures


def _loss_to_lower(records: list[list], kills: list[float]) -> list[float]:
    """Per kill: the time to the first committed record processed at parallelism 1 after it."""
    at_one = sorted(r[3] for r in records if r[4] == 1)
    found = []
    for kill in kills:
        later = [s for s in at_one if s > kill]
        if later:
            found.append(round(later[0] - kill, 3))
    return found


def _steady_gap(stamps: list[float], done: list[dict], keys: int, records: list[list]) -> float:
    """The largest gap away from every rescale (1 s either side), once the keys were filled:
    what the job's own rhythm (network buffers, checkpoints) gives without a rescale."""
    filled = min((r[3] for r in records if r[1] > keys), default=stamps[0])
    windows = [(r["requested_ms"] / 1000 - 1, r["ended_ms"] / 1000 + 1) for r in done]
    best = 0.0
    for a, b in itertools.pairwise(stamps):
        if a < filled or any(a < hi and b > lo for lo, hi in windows):
            continue
        best = max(best, b - a)
    return round(best, 3)


def _summary(values: list[float]) -> dict:
    median, p99 = median_p99(values)
    return {"n": len(values), "median": round(median, 3), "p99": round(p99, 3),
            "all": [round(v, 3) for v in values]}  # fmt: skip


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def _describe(record) -> str:
    if not isinstance(record, dict):
        import msgspec

        record = msgspec.to_builtins(record)
    moved = ", ".join(f"{v} {record['from_parallelism'].get(v)} -> {p}"
                      for v, p in record["to_parallelism"].items()
                      if record["from_parallelism"].get(v) != p)  # fmt: skip
    downtime = _seconds(record.get("downtime_ms"))
    return f"{record['status']} {moved or '(no change)'}, reported downtime {downtime} s"


def _print(figures: dict) -> None:
    name = figures["case"]
    line = (f"{name}: {figures['keys']:,} keys, {figures['records_checked']:,} committed "
            f"records exactly once; committed gap around a rescale, median / p99 (n):")  # fmt: skip
    for label in ("up", "down"):
        g, r = figures[f"{label}_gap_s"], figures[f"{label}_reported_s"]
        line += (f" {label} {g['median']} / {g['p99']} s ({g['n']}; reported downtime "
                 f"{r['median']} / {r['p99']} s);")  # fmt: skip
    if "loss_to_lower_s" in figures:
        k = figures["loss_to_lower_s"]
        line += f" kill -> first record at parallelism 1: {k['median']} / {k['p99']} s ({k['n']});"
    line += f" largest gap away from rescales {figures['steady_gap_s']} s;"
    line += f" goal <= {figures['goal_s']:g} s"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", choices=sorted(CASES))
    parser.add_argument("--rescales", type=int, help="each way (reactive: losses); default 10")
    parser.add_argument(
        "--quick", action="store_true", help="2 rescales each way, a tenth of the keys: a smoke run"
    )
    parser.add_argument(
        "-D",
        dest="defined",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a configuration key for every case's job, e.g. restart-strategy.type=fixed-delay",
    )
    args = parser.parse_args()
    for item in args.defined:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"-D {item!r}: expected KEY=VALUE")
        DEFINED[key] = value
    rescales = args.rescales or (2 if args.quick else 10)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Spark's Python workers import the job's module (``rescale_job``) as the driver does
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(BENCH), str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    work = tempfile.mkdtemp(prefix="barrierflow-rescale-")
    results = []
    try:
        for name in args.cases:
            case = CASES[name]
            keys = case.quick_keys if args.quick else case.keys
            if name == "reactive":
                figures = run_reactive(case, keys, rescales, work)
            else:
                figures = run_by_hand(name, case, keys, rescales, work)
            _print(figures)
            results.append(figures)
    except BaseException:
        print(f"the run failed; its job's files and logs are kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"benchmark": "rescale", "quick": args.quick, "figures": results}))


if __name__ == "__main__":
    main()
