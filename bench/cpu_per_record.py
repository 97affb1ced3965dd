"""The keyed count (or the window job, ``--job windows``) of two checkouts, interleaved (ABBA),
by throughput and by the CPU time its Python workers spend per event: the check that a change
did not slow the per-record path.

A throughput figure of one run swings by ±15% on a shared machine; the CPU seconds of the
workers swing less, since time spent waiting for a core is not counted. Each checkout runs its
own script (so any commit that has it can be compared), in a process whose
tree is sampled from ``/proc`` every 50 ms: the Spark JVM's descendants are the Python workers.
The CPU figure includes the workers' start (imports, the tasks' ``open``); at 20,000,000 events
that is a few percent of it.

    git worktree add /tmp/before <commit>
    python bench/cpu_per_record.py /tmp/before . --events 20000000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from peak_rss import process_stats

JOBS = ("keyed_count", "windows")  # bench/<job>.py: the same options, one JSON line


def run_once(checkout: str, events: int, keys: int, job: str = "keyed_count") -> dict[str, float]:
    """One run of ``bench/<job>.py`` in ``checkout``: its figures and the CPU seconds of its
    parts."""
    command = [sys.executable, f"bench/{job}.py", "--events", str(events)]
    command += ["--keys", str(keys), "--parallelism", "2", "--interval-ms", "1000"]
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    process = subprocess.Popen(
        command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    cpu: dict[int, tuple[str, float]] = {}  # pid -> (part, the most CPU seen)
    while process.poll() is None:
        table = process_stats()
        children: dict[int, list[int]] = {}
        for pid, (_, ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        pending = [(process.pid, "driver")]
        while pending:
            pid, part = pending.pop()
            if pid not in table:
                continue
            name, _, _, seconds = table[pid]
            if pid != process.pid:
                part = "jvm" if name == "java" else "workers" if part != "driver" else "driver"
            cpu[pid] = (part, max(seconds, cpu.get(pid, (part, 0.0))[1]))
            pending += [(child, part) for child in children.get(pid, ())]
        time.sleep(0.05)
    assert process.stdout is not None
    lines = process.stdout.read().strip().splitlines()
    if process.returncode != 0 or not lines:
        raise SystemExit(f"bench/{job}.py in {checkout} failed (status {process.returncode})")
    result = json.loads(lines[-1])
    parts: dict[str, float] = {}
    for part, seconds in cpu.values():
        parts[part] = parts.get(part, 0.0) + seconds
    return {
        "events_per_s": result["events_per_s"],
        "worker_ns_per_event": round(parts.get("workers", 0.0) / events * 1e9),
        **{f"{part}_cpu_s": round(s, 2) for part, s in sorted(parts.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="a checkout (a git worktree) of the commit before")
    parser.add_argument("after", help="a checkout of the commit after")
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2, help="each round runs A B B A")
    parser.add_argument("--job", choices=JOBS, default="keyed_count", help="which benchmark")
    args = parser.parse_args()
    for path in (args.before, args.after):
        if path.startswith("-") or not os.path.isfile(os.path.join(path, f"bench/{args.job}.py")):
            parser.error(f"{path!r} is not a checkout with bench/{args.job}.py")
    runs: dict[str, list[dict[str, float]]] = {args.before: [], args.after: []}
    for _ in range(args.rounds):
        for checkout in (args.before, args.after, args.after, args.before):
            figures = run_once(checkout, args.events, args.keys, args.job)
            runs[checkout].append(figures)
            print(json.dumps({"checkout": checkout, **figures}), flush=True)
    medians = {
        c: {k: statistics.median(r[k] for r in rs) for k in ("events_per_s", "worker_ns_per_event")}
        for c, rs in runs.items()
    }
    before, after = medians[args.before], medians[args.after]
    print(
        json.dumps(
            {
                "medians": medians,
                "after_over_before_events_per_s": round(
                    after["events_per_s"] / before["events_per_s"], 3
                ),
                "after_over_before_cpu_per_event": round(
                    after["worker_ns_per_event"] / before["worker_ns_per_event"], 3
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
