"""The fault campaign (issue 24): randomized runs of the reference jobs under randomized faults,
each run's committed output compared with a failure-free run of the same job, record by record.

Each run draws from its seed (``chaos_plan.py``) a job (keyed count, event-time windows,
broadcast state with side outputs, unaligned checkpoints under back-pressure, Kafka to Kafka,
Kafka to PostgreSQL, files to Parquet), a state backend (heap, or RocksDB with incremental
checkpoints and local recovery), checkpoint storage (local or S3), one to three faults at random
times and sometimes bad input; runs its job as a program of ``barrierflow run``
(``chaos_jobs/program.py``), injects the faults (``chaos_faults.py``), and prints one line:

    seed=17 job=keyed_count rocksdb local faults=[kill_task@2.1s(task 412)[pid 8123; record
    +1.35s, checkpoint +1.52s]] outcome=exactly-once took=31s

``record +X`` is the time from the fault to the first record processed by the attempt that
recovered from it, ``checkpoint +Y`` to the first checkpoint completed after it. A failure-free
reference per job and backend is run once and cached (``--references``).

A run that draws a fault of driver high availability (``kill_driver_restart``,
``kill_driver_standby``, ``pause_leader``) runs its drivers under it: a cluster id from the
seed, its storage in the run's directory, a lease of 2 s; its line says ``ha(lease 2s)``.
``rescale`` rescales the running job (2 -> 1, or 1 -> 2) with ``barrierflow rescale``;
``kill_during_rescale`` SIGKILLs a task of the rescaled attempt while it restores, and the
rescale falls back to the old parallelism from the same checkpoint.

    python bench/chaos.py --runs 100                    # seeds from a random base
    python bench/chaos.py --seed 17                     # replays the run of seed 17
    python bench/chaos.py --runs 5 --date-seeds         # CI: seeds that change every day
    python bench/chaos.py --runs 20 --jobs keyed_count --faults kill_task,storage_error
    python bench/chaos.py --runs 30 --faults kill_driver_restart,kill_driver_standby,pause_leader
    python bench/chaos.py --runs 30 --faults rescale,kill_during_rescale
    python bench/chaos.py --runs 100 --slice 10 --lock /tmp/heavy.lock   # 10 runs per hold

The servers a slice needs (Kafka broker, PostgreSQL, S3) are started for it from
``tests/servers``. Exits 1 when a run failed; the failing seeds are listed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import random
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos_jobs.catalog import JOBS, Servers
from chaos_plan import BadInput, FaultKind, JobTraits, RunPlan, plan
from chaos_run import Reference, Run, RunResult
from chaos_verdict import Verdict

from barrierflow.checkpoint import file_systems

REFERENCE_VERSION = 1  # raise when a job's output changes


def traits() -> list[JobTraits]:
    return [
        JobTraits(j.name, "kafka" in j.servers, "postgres" in j.servers, j.poison)
        for j in JOBS.values()
    ]


def _names(text: str | None, choices: list[str], what: str) -> list[str]:
    if not text:
        return choices
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in choices]
    if unknown:
        raise SystemExit(f"unknown {what} {unknown}; choose among {', '.join(choices)}")
    return names


def seeds_of(args: argparse.Namespace) -> list[int]:
    if args.seed:
        return args.seed
    if args.date_seeds:
        base = int(datetime.date.today().strftime("%Y%m%d")) * 1000
    else:
        base = args.seed_base if args.seed_base is not None else random.randrange(10**6) * 1000
    return list(range(base, base + args.runs))


@contextlib.contextmanager
def held(lock_path: str | None) -> Iterator[None]:
    """The machine's lock for heavy runs, if one is named, for one slice."""
    if lock_path is None:
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextlib.contextmanager
def servers_for(plans: list[RunPlan]) -> Iterator[Servers]:
    """The servers the plans' jobs and storage need, for the slice."""
    needs = set().union(*(JOBS[p.job].servers for p in plans))
    with contextlib.ExitStack() as stack:
        kafka = postgres = s3 = None
        if "kafka" in needs:
            from tests.servers.kafka import kafka_broker

            kafka = stack.enter_context(kafka_broker())
        if "postgres" in needs:
            from tests.servers.postgres import postgres_server

            postgres = stack.enter_context(postgres_server())
        if any(p.storage == "s3" for p in plans):
            from tests.servers.s3 import s3_server

            s3 = stack.enter_context(s3_server())
            file_systems.initialize(file_systems.settings_from(_Options(s3.configuration())))
        yield Servers(kafka, postgres, s3)
        file_systems.initialize(file_systems.FileSystemSettings())


class _Options(dict):
    """Configuration keys for ``file_systems.settings_from`` (``get`` with None default)."""


class References:
    """Failure-free outputs, one per job and backend, computed once and kept in a directory."""

    def __init__(self, directory: str, work_dir: str) -> None:
        self.directory = directory
        self.work_dir = work_dir
        os.makedirs(directory, exist_ok=True)

    def get(self, job: str, backend: str, servers: Servers) -> Reference:
        path = os.path.join(
            self.directory, f"{job}-{backend}-n{JOBS[job].n}-v{REFERENCE_VERSION}.json"
        )
        if os.path.exists(path):
            with open(path) as f:
                data = json.load(f)
            return Reference([tuple(r) for r in data["records"]], data["duration_s"])
        run = Run(RunPlan(0, job, backend, "local", ()), self.work_dir, servers, None)
        result = run.execute(timeout_s=600)
        if result.verdict is not Verdict.EXACTLY_ONCE or run.t0 is None:
            raise RuntimeError(f"the reference run of {job} ({backend}) failed: {result.reason}")
        records = JOBS[job].committed(run.spec, servers)
        reference = Reference(records, run.ended_at - run.t0)
        with open(path, "w") as f:
            json.dump({"records": records, "duration_s": reference.duration_s}, f)
        return reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seed", type=int, action="append", help="replay this seed's run")
    parser.add_argument("--seed-base", type=int, help="seeds BASE .. BASE+runs-1")
    parser.add_argument("--date-seeds", action="store_true", help="a base from today's date")
    parser.add_argument("--jobs", help="comma-separated: " + ",".join(JOBS))
    parser.add_argument("--faults", help="comma-separated: " + ",".join(k.value for k in FaultKind))
    parser.add_argument(
        "--bad-inputs", help="comma-separated: " + ",".join(b.value for b in BadInput)
    )
    parser.add_argument("--slice", type=int, default=10, help="runs per lock hold")
    parser.add_argument("--lock", help="a file to flock around each slice")
    parser.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "barrierflow-chaos"))
    parser.add_argument("--references", help="reference cache (default: WORK/references)")
    parser.add_argument("--keep", action="store_true", help="keep the directories of runs")
    args = parser.parse_args(argv)

    jobs = set(_names(args.jobs, list(JOBS), "jobs"))
    fault_kinds = [
        FaultKind(f) for f in _names(args.faults, [k.value for k in FaultKind], "faults")
    ]
    bad = [BadInput(b) for b in _names(args.bad_inputs, [b.value for b in BadInput], "inputs")]
    selected = [t for t in traits() if t.name in jobs]
    plans = [plan(seed, selected, fault_kinds, bad) for seed in seeds_of(args)]
    references = References(args.references or os.path.join(args.work, "references"), args.work)
    selection = " ".join(
        f"--{name} {value}"
        for name, value in (
            ("jobs", args.jobs),
            ("faults", args.faults),
            ("bad-inputs", args.bad_inputs),
        )
        if value
    )
    print(f"# replay a run: python bench/chaos.py --seed SEED {selection}".rstrip(), flush=True)
    results: list[RunResult] = []
    for start in range(0, len(plans), args.slice):
        chunk = plans[start : start + args.slice]
        with held(args.lock), servers_for(chunk) as servers:
            for p in chunk:
                reference = references.get(p.job, p.backend, servers)
                run = Run(p, args.work, servers, reference)
                result = run.execute(timeout_s=4 * reference.duration_s + 240)
                print(result.line(), flush=True)
                results.append(result)
                kept = (Verdict.FAILED, Verdict.BROKER_LOST)
                if result.verdict not in kept and not args.keep:
                    shutil.rmtree(run.base, ignore_errors=True)
    print(summary(results), flush=True)
    return 1 if any(r.verdict is Verdict.FAILED for r in results) else 0


def summary(results: list[RunResult]) -> str:
    by_job: Counter = Counter(r.plan.job for r in results)
    by_fault: Counter = Counter()
    injected: Counter = Counter()
    for r in results:
        for i in r.injections:
            by_fault[i.fault.kind.value] += 1
            injected[i.fault.kind.value] += i.at is not None
    by_bad = Counter(r.plan.bad_input.value for r in results if r.plan.bad_input)
    outcomes = Counter(r.verdict.value for r in results)
    record_times = defaultdict(list)
    for r in results:
        for i in r.injections:
            if i.first_record_s is not None:
                record_times[i.fault.kind.value].append(i.first_record_s)
    lines = [
        f"runs: {len(results)}; outcomes: {dict(outcomes)}",
        "by job: " + ", ".join(f"{k} {v}" for k, v in sorted(by_job.items())),
        "by fault (planned/injected): "
        + ", ".join(f"{k} {v}/{injected[k]}" for k, v in sorted(by_fault.items())),
        "by bad input: " + (", ".join(f"{k} {v}" for k, v in sorted(by_bad.items())) or "none"),
    ]
    for kind, times in sorted(record_times.items()):
        times.sort()
        lines.append(
            f"recovery {kind}: fault -> first record median {times[len(times) // 2]:.2f}s "
            f"max {times[-1]:.2f}s over {len(times)}"
        )
    failed = [r.plan.seed for r in results if r.verdict is Verdict.FAILED]
    lines.append("failed seeds: " + (" ".join(map(str, failed)) or "none"))
    lost = [r.plan.seed for r in results if r.verdict is Verdict.BROKER_LOST]
    if lost:
        lines.append("seeds the broker lost records of: " + " ".join(map(str, lost)))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
