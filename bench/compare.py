"""Ours, the ceilings and the peers, one after another, three rounds interleaved: a table of
medians with the ratios ours / ceiling and ours / peer, each measured in this one run.

The groups run one after another, each group's runs interleaved over the rounds; the Kafka
test broker runs during the kafka group only (idle, it still keeps half a core busy, which
slowed the keyed group by up to half when it ran beside it).

The runs (``--only`` takes these names, or a group's):

- group ``keyed`` (K = 100,000, parallelism 2, a checkpoint every second): ``ours-keyed``
  (``keyed_count.py``), ``ours-event-time`` (``--event-time``), ``ours-windows``
  (``windows.py``: tumbling event-time windows, as many events as the keyed count),
  ``ours-typed-state`` (``--typed-state``: the count's state declared ``Types.LONG()``),
  ``ceiling-dict-1`` and ``ceiling-dict-2`` (``ceiling.py dict`` in 1 and 2 processes),
  ``ceiling-functions-2`` (``ceiling.py functions``: the keyed count's own functions alone,
  once per event, 2 processes);
- group ``rocksdb`` (K = 2,000,000): ``ours-rocksdb`` (``keyed_count.py --state-backend rocksdb
  --incremental``), ``ceiling-rocksdict`` (``ceiling.py rocksdict``, 2 processes);
- group ``kafka`` (``kafka_roundtrip.py``'s workload, one broker for all its runs):
  ``ours-kafka-exactly-once``, ``ours-kafka-exactly-once-keyed`` (``--reinterpret``: the
  input topic written by key group and read with ``reinterpret_as_keyed_stream``, the count
  chained to the source), ``ours-kafka-none``, ``ceiling-kafka-transactional``,
  ``ceiling-kafka-plain``;
- group ``peers`` (the keyed count, K = 100,000, fewer events: they are slower): ``bytewax``,
  ``pyflink-thread``, ``pyflink-process`` (``peers/``, each in a virtual environment of its own,
  installed on first use);
- not run unless named: ``bytewax-rocksdb-keys`` (Bytewax at the RocksDB group's K, to compare
  memory).

Each run is a process of its own; its last JSON line gives events/s and the peak RSS of its
process tree (``peak_rss.py``). A run that fails is reported and the others go on.

    python bench/compare.py                       # everything, 3 rounds
    python bench/compare.py --quick               # small sizes, 1 round: a couple of minutes
    python bench/compare.py --only keyed,bytewax  # a group and a run
    python bench/compare.py --record              # also rewrite its rows of the current table

``--record`` rewrites, in the current table at the top of docs/benchmarks.md, the rows of the
runs measured (``current_table.py``): each with this run's figure, its ratios, the command and
the date. The other rows stay as they were.

Only one benchmark may run on the machine at a time; nothing else should.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from current_table import Measured, rewrite

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RECORD = REPO / "docs" / "benchmarks.md"
# the last cell of a run's row new to the current table: the section on how runs measure
NEW_ROW_DETAILS = "[method](#how-the-figures-are-measured)"
TIMES = "\N{MULTIPLICATION SIGN}"  # "0.5 times the ceiling", in the current table


@dataclass(frozen=True)
class Sizes:
    keyed_events: int
    rocksdb_events: int
    rocksdb_keys: int
    kafka_events: int
    bytewax_events: int
    pyflink_thread_events: int
    pyflink_process_events: int
    windows_events: int


# the windows run takes the keyed count's events: its ratio compares the same work
FULL = Sizes(5_000_000, 4_000_000, 2_000_000, 1_000_000, 1_000_000, 200_000, 100_000, 5_000_000)
QUICK = Sizes(1_000_000, 400_000, 200_000, 50_000, 100_000, 20_000, 10_000, 1_000_000)
KEYS = 100_000
KAFKA_KEYS = 10_000


@dataclass(frozen=True)
class Run:
    name: str
    group: str
    what: str
    command: tuple[str, ...]
    by_default: bool = True


def runs(sizes: Sizes, bootstrap: str) -> list[Run]:
    """Every run, in the order of a round."""
    py = sys.executable
    job = ("--parallelism", "2", "--interval-ms", "1000")
    n = str(sizes.keyed_events)
    keyed = (py, str(BENCH / "keyed_count.py"), *job, "--keys", str(KEYS))
    rocks = ("--events", str(sizes.rocksdb_events), "--keys", str(sizes.rocksdb_keys))
    ceiling = (py, str(BENCH / "ceiling.py"))
    kafka = (py, str(BENCH / "kafka_roundtrip.py"), "--events", str(sizes.kafka_events))
    kafka += ("--keys", str(KAFKA_KEYS), "--no-latency", "--bootstrap", bootstrap)
    ceiling_kafka = (*ceiling, "kafka", "--events", str(sizes.kafka_events))
    ceiling_kafka += ("--keys", str(KAFKA_KEYS), "--bootstrap", bootstrap)
    bytewax = (py, str(BENCH / "peers" / "bytewax_count.py"))
    pyflink = (py, str(BENCH / "peers" / "pyflink_count.py"), "--keys", str(KEYS))
    return [
        Run("ours-keyed", "keyed", "keyed count", (*keyed, "--events", n)),
        Run("ours-event-time", "keyed", "keyed count, event time",
            (*keyed, "--events", n, "--event-time")),
        Run("ours-typed-state", "keyed", "keyed count, state typed Types.LONG()",
            (*keyed, "--events", n, "--typed-state")),
        Run("ceiling-dict-1", "keyed", "dict, 1 process",
            (*ceiling, "dict", "--events", n, "--keys", str(KEYS), "--processes", "1")),
        Run("ceiling-dict-2", "keyed", "dict, 2 processes",
            (*ceiling, "dict", "--events", n, "--keys", str(KEYS), "--processes", "2")),
        Run("ceiling-functions-2", "keyed", "the job's functions alone, 2 processes",
            (*ceiling, "functions", "--events", n, "--keys", str(KEYS), "--processes", "2")),
        Run("ours-windows", "keyed", "tumbling event-time windows",
            (py, str(BENCH / "windows.py"), *job, "--events", str(sizes.windows_events),
             "--keys", str(KEYS))),
        Run("ours-rocksdb", "rocksdb", "keyed count, RocksDB, incremental",
            (*keyed[:2], *job, *rocks, "--state-backend", "rocksdb", "--incremental")),
        Run("ceiling-rocksdict", "rocksdb", "rocksdict get+put, 2 processes",
            (*ceiling, "rocksdict", *rocks, "--processes", "2")),
        Run("ours-kafka-exactly-once", "kafka", "Kafka to Kafka, exactly-once",
            (*kafka, "--guarantees", "EXACTLY_ONCE")),
        Run("ours-kafka-exactly-once-keyed", "kafka",
            "Kafka to Kafka, exactly-once, input by key group (reinterpret_as_keyed_stream)",
            (*kafka, "--guarantees", "EXACTLY_ONCE", "--reinterpret")),
        Run("ours-kafka-none", "kafka", "Kafka to Kafka, no guarantee",
            (*kafka, "--guarantees", "NONE")),
        Run("ceiling-kafka-transactional", "kafka", "Kafka client alone, transactional",
            (*ceiling_kafka, "--transactional")),
        Run("ceiling-kafka-plain", "kafka", "Kafka client alone, plain", ceiling_kafka),
        Run("bytewax", "peers", "Bytewax, keyed count",
            (*bytewax, "--events", str(sizes.bytewax_events), "--keys", str(KEYS))),
        Run("pyflink-thread", "peers", "PyFlink thread mode, keyed count",
            (*pyflink, "--events", str(sizes.pyflink_thread_events), "--mode", "thread")),
        Run("pyflink-process", "peers", "PyFlink process mode, keyed count",
            (*pyflink, "--events", str(sizes.pyflink_process_events), "--mode", "process")),
        Run("bytewax-rocksdb-keys", "peers", "Bytewax, keyed count at the RocksDB group's K",
            (*bytewax, *rocks), by_default=False),
    ]  # fmt: skip


# (label, numerator, denominator, the goal)
RATIOS = [
    ("keyed count / dict ceiling, 2 processes", "ours-keyed", "ceiling-dict-2", ">= 0.5"),
    ("keyed count / dict ceiling, 1 process", "ours-keyed", "ceiling-dict-1", ""),
    ("the job's functions alone / dict ceiling, 2 processes", "ceiling-functions-2",
     "ceiling-dict-2", ""),
    ("keyed count / the job's functions alone, 2 processes", "ours-keyed",
     "ceiling-functions-2", ""),
    ("keyed count with event time / without", "ours-event-time", "ours-keyed", ">= 0.9"),
    ("typed LONG state / untyped", "ours-typed-state", "ours-keyed", ">= 0.97"),
    ("windows / keyed count", "ours-windows", "ours-keyed", ">= 0.5"),
    ("RocksDB keyed count / rocksdict ceiling", "ours-rocksdb", "ceiling-rocksdict", ">= 0.5"),
    ("Kafka exactly-once / client alone, transactional", "ours-kafka-exactly-once",
     "ceiling-kafka-transactional", ">= 0.5"),
    ("Kafka exactly-once, input by key group / client alone, transactional",
     "ours-kafka-exactly-once-keyed", "ceiling-kafka-transactional", ">= 0.5"),
    ("Kafka no guarantee / client alone, plain", "ours-kafka-none", "ceiling-kafka-plain", ""),
    ("keyed count / Bytewax", "ours-keyed", "bytewax", ""),
    ("keyed count / PyFlink thread mode", "ours-keyed", "pyflink-thread", ""),
    ("keyed count / PyFlink process mode", "ours-keyed", "pyflink-process", ""),
]  # fmt: skip


# (label, run, peer at the same size, the goal): peak RSS of the whole process trees
MEMORY_RATIOS = [
    ("peak RSS: RocksDB keyed count / Bytewax at the same K", "ours-rocksdb",
     "bytewax-rocksdb-keys", "<= 1"),
]  # fmt: skip


def select(all_runs: list[Run], only: str | None) -> list[Run]:
    if not only:
        return [r for r in all_runs if r.by_default]
    names = {n.strip() for n in only.split(",") if n.strip()}
    known = {r.name for r in all_runs} | {r.group for r in all_runs}
    unknown = names - known
    if unknown:
        raise SystemExit(
            f"--only: no run or group named {', '.join(sorted(unknown))}; "
            f"choose from {', '.join(sorted(known))}"
        )
    return [r for r in all_runs if r.name in names or (r.group in names and r.by_default)]


def run_once(run: Run, timeout_s: float, log_dir: Path) -> dict:
    """One run in a process group of its own (killed whole on a timeout: Spark's JVM and
    workers with it); its last JSON line with events/s, or ``{"error": ...}``."""
    log = log_dir / f"{run.name}-{time.monotonic_ns()}.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            run.command, stdout=subprocess.PIPE, stderr=stderr, start_new_session=True, cwd=REPO
        )
        try:
            stdout, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the leader still runs: the group is ours
            process.communicate()
            return {"error": f"still running after {timeout_s:.0f} s (log: {log})"}
    figures = [x for x in map(_json, stdout.decode().splitlines()) if "events_per_s" in x]
    if process.returncode or not figures:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit code {process.returncode}: {tail[0][:300]} (log: {log})"}
    return figures[-1]


def _json(line: str) -> dict:
    """A line of figures, or nothing for any other line a benchmark prints."""
    try:
        value = json.loads(line) if line.startswith("{") else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@contextlib.contextmanager
def kafka_bootstrap(given: str | None, needed: bool) -> Iterator[str]:
    """The broker of the kafka group: the one given, or the test broker started once."""
    if given or not needed:
        yield given or ""
        return
    sys.path.insert(0, str(REPO))
    from tests.servers.kafka import kafka_broker

    with kafka_broker() as broker:
        yield broker.bootstrap_servers


def machine() -> str:
    with open("/proc/cpuinfo") as f:
        models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    with open("/proc/meminfo") as f:
        total_kib = int(f.readline().split()[1])
    model = models[0] if models else platform.processor() or "unknown CPU"
    return (
        f"{model}, {os.cpu_count()} cores, {total_kib / (1 << 20):.0f} GiB, "
        f"Python {platform.python_version()}"
    )


def _fmt(x: float) -> str:
    return f"{x:,.0f}"


@dataclass(frozen=True)
class Figures:
    """A run's figures over the rounds it did not fail."""

    rates: list[float]
    events: int
    rss_median: float
    failed: int

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    def shown(self) -> str:
        rounds = " / ".join(_fmt(x) for x in self.rates)
        return rounds + (f" ({self.failed} failed)" if self.failed else "")


def figures(results: list[dict]) -> Figures | None:
    """None for a run that failed in every round."""
    done = [r for r in results if "error" not in r]
    if not done:
        return None
    return Figures(
        [r["events_per_s"] for r in done],
        done[0]["events"],
        statistics.median(r["peak_rss_mib"] for r in done),
        len(results) - len(done),
    )


def ratios(by_run: dict[str, Figures]) -> list[tuple[str, str, str, str, float]]:
    """(label, numerator, denominator, goal, value) of each ratio whose two runs have figures:
    events/s, then peak RSS."""
    found = [
        (label, num, den, goal, by_run[num].median / by_run[den].median)
        for label, num, den, goal in RATIOS
        if num in by_run and den in by_run
    ]
    found += [
        (label, num, den, goal, by_run[num].rss_median / by_run[den].rss_median)
        for label, num, den, goal in MEMORY_RATIOS
        if num in by_run and den in by_run
    ]
    return found


def table(selected: list[Run], results: dict[str, list[dict]]) -> str:
    """Medians of each run, then the ratios whose two runs both have figures, in Markdown."""
    rows = [
        "| run | what | events | events/s (rounds) | median | peak RSS, MiB (median) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    by_run: dict[str, Figures] = {}
    for run in selected:
        found = figures(results[run.name])
        if found is None:
            error = results[run.name][0]["error"]
            rows.append(f"| {run.name} | {run.what} | - | failed: {error} | - | - |")
            continue
        by_run[run.name] = found
        rows.append(
            f"| {run.name} | {run.what} | {_fmt(found.events)} | {found.shown()} | "
            f"**{_fmt(found.median)}** | {found.rss_median:,.0f} |"
        )
    rows += ["", "| ratio of medians | value | goal (issue 26) |", "| --- | --- | --- |"]
    for label, _, _, goal, value in ratios(by_run):
        rows.append(f"| {label} | **{value:.3g}** | {goal or '-'} |")
    return "\n".join(rows)


def measured(
    selected: list[Run], results: dict[str, list[dict]], command: str, date: str
) -> list[Measured]:
    """The current table's rows of the runs with figures, each with the ratios it is the
    numerator of."""
    by_run = {r.name: f for r in selected if (f := figures(results[r.name])) is not None}
    own: dict[str, list[tuple[str, str]]] = {name: [] for name in by_run}
    memory = {label for label, *_ in MEMORY_RATIOS}
    for label, num, den, goal, value in ratios(by_run):
        text = ("peak RSS " if label in memory else "") + f"**{value:.3g}** {TIMES} `{den}`"
        own[num].append((den, text + (f" (goal {goal})" if goal else "")))
    rows = []
    for run in selected:
        if run.name not in by_run:
            continue
        f = by_run[run.name]
        figure = (
            f"**{_fmt(f.median)}** events/s over {_fmt(f.events)} events "
            f"(rounds {f.shown()}); peak RSS {f.rss_median:,.0f} MiB"
        )
        what = f"`{run.name}`: {run.what}"
        rows.append(Measured(run.name, what, f"`{command}`", figure, tuple(own[run.name]), date))
    return rows


def record(rows: list[Measured]) -> None:
    RECORD.write_text(rewrite(RECORD.read_text(), rows, NEW_ROW_DETAILS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round")
    parser.add_argument("--rounds", type=int, help="default 3 (1 with --quick)")
    parser.add_argument("--only", help="runs or groups, comma-separated (see above)")
    parser.add_argument("--bootstrap", help="an existing Kafka cluster; default: start one")
    parser.add_argument("--timeout-s", type=float, default=1800, help="per run")
    parser.add_argument(
        "--record", action="store_true", help=f"rewrite its rows of {RECORD.name}'s current table"
    )
    for field in Sizes.__dataclass_fields__:
        parser.add_argument(f"--{field.replace('_', '-')}", type=int, help="a size")
    args = parser.parse_args()
    base = QUICK if args.quick else FULL
    sizes = Sizes(**{f: getattr(args, f) or getattr(base, f) for f in Sizes.__dataclass_fields__})
    rounds = args.rounds or (1 if args.quick else 3)
    selected = select(runs(sizes, ""), args.only)

    logs = Path(tempfile.mkdtemp(prefix="barrierflow-compare-"))
    results: dict[str, list[dict]] = {r.name: [] for r in selected}
    # One group after another, its runs interleaved over the rounds; the test broker runs
    # during the kafka group only: idle, it still keeps half a core busy.
    for group in dict.fromkeys(r.group for r in selected):
        with kafka_bootstrap(args.bootstrap, group == "kafka") as bootstrap:
            names = {r.name for r in selected if r.group == group}
            group_runs = [r for r in runs(sizes, bootstrap) if r.name in names]
            for round_ in range(1, rounds + 1):
                for run in group_runs:
                    figures = run_once(run, args.timeout_s, logs)
                    results[run.name].append(figures)
                    shown = figures.get("error") or (
                        f"{_fmt(figures['events_per_s'])} events/s, "
                        f"{figures.get('peak_rss_mib')} MiB"
                    )
                    print(
                        f"round {round_}/{rounds} {run.name}: {shown}", file=sys.stderr, flush=True
                    )
    text = table(selected, results)
    if any("error" in r for rs in results.values() for r in rs):
        print(f"the logs of the runs are in {logs}", file=sys.stderr)
    else:
        shutil.rmtree(logs)
    command = shlex.join(["python", "bench/compare.py", *sys.argv[1:]])
    today = datetime.date.today().isoformat()
    print(f"{today}, {machine()}\n\n{text}")
    if args.record:
        rows = measured(selected, results, command, today)
        record(rows)
        unrecorded = sorted({r.name for r in selected} - {m.run for m in rows})
        if unrecorded:
            print(f"not recorded (failed in every round): {', '.join(unrecorded)}", file=sys.stderr)


if __name__ == "__main__":
    main()
