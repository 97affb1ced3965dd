"""How long a job under driver high availability is without a driver: on ``local[2]``, a keyed
running sum at parallelism 2 into a FileSink, checkpoints every 300 ms, its driver under
high availability (lease ``--lease-s``), run as the campaign runs its jobs (``barrierflow run``
of ``chaos_jobs/program.py``, each driver in a session of its own). Three cases:

- ``restart``: the leader's process group SIGKILLed once two checkpoints completed, and the same
  command started again: from the kill to the first record the restarted program processed
  (its Python and JVM start included). Goal: <= 8 s.
- ``standby``: the same command waiting beside the leader as a standby; the leader SIGKILLed:
  from the kill to the first record the standby processed. Goal: <= the lease + 2 s.
- ``zombie``: the leader SIGSTOPped for three leases beside a standby, then SIGCONTed: it must
  exit with status 4 within 60 s of waking, having completed no checkpoint since its pause,
  and the output be exactly-once.

A first record is the tasks' first-record timestamp the JobMaster reports in the recovery
(``RunReport``), as in ``bench/recovery.py`` and the campaign. Each case prints median and p99
over ``--runs`` runs, and where the time went, from the new leader's log (medians):

- ``takeover``: the kill to the new leader's "Leading cluster" (a restarted program: Python,
  imports, the job file, the lease; a standby: seeing the holder gone, or the lease run out);
- ``spark``: to the JobMaster's first attempt submitted (the SparkContext and its JVM, unless
  a standby created them while it waited; taking the retained checkpoints over, planning);
- ``first_record``: to the first record (the barrier stage scheduled, Python workers started,
  state restored).

    python bench/driver_failover.py                      # 10 runs of each case
    python bench/driver_failover.py --cases standby --runs 3

It prints figures and never asserts timings; every run's output is checked exactly-once, and a
run that is not is reported. The last line is JSON with every figure. Run it alone on the
machine.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chaos_drivers import ha_options
from chaos_faults import Driver, JobDirectory
from chaos_jobs.catalog import JOBS, Servers
from chaos_jobs.spec import JobSpec, RunReport
from chaos_verdict import CheckpointEpoch, DriverEnd, RunFacts, driver_problem

from barrierflow.cluster.spark.session import EARLY_CONTEXT_READY
from tests.jobs import odd_even

CASES = ("restart", "standby", "zombie")
GOALS = {"restart": "<= 8 s", "standby": "<= lease + 2 s", "zombie": "exit <= 60 s after waking"}
N = 12_000  # records: ~5 s of processing, so the job goes on well after the fault
_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


@dataclass
class Failover:
    case: str
    fault_at: float = 0.0
    record_s: float | None = None  # fault -> the new leader's first record
    phases: dict[str, float] = field(default_factory=dict)
    zombie_exit_s: float | None = None  # zombie: SIGCONT -> its exit
    problem: str = ""  # not exactly-once, or a driver that did not end as it should


def _logged_at(driver: Driver, needle: str) -> float | None:
    """Epoch seconds of the first line of the driver's log that holds ``needle``."""
    for line in driver.log().splitlines():
        found = _TIME.match(line)
        if found and needle in line:
            stamp = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
            return stamp.timestamp()
    return None


def _wait(condition, what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


class FailoverRun:
    """One run of one case, in a directory of its own."""

    def __init__(self, case: str, work: str, number: int, lease_s: float) -> None:
        self.case = case
        self.lease_s = lease_s
        self.base = os.path.join(work, f"{case}-{number}")
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        spec = JobSpec(
            job="keyed_count",
            backend="hashmap",
            n=N,
            base=self.base,
            checkpoint_dir=os.path.join(self.base, "ckpt"),
            checkpoint_interval_ms=300,
        )
        self.spec = JOBS["keyed_count"].prepare(spec, Servers(), None)
        self.spec_path = os.path.join(self.base, "spec.json")
        self.spec.dump(self.spec_path)
        self.directory = JobDirectory(self.spec.checkpoint_dir)
        self.options = ha_options(self.base, f"failover-{number}", lease_s)
        self.drivers: list[Driver] = []

    def start(self) -> Driver:
        driver = Driver(self.base, self.spec_path, self.options, len(self.drivers) + 1)
        self.drivers.append(driver)
        return driver

    def measure(self) -> Failover:
        result = Failover(self.case)
        try:
            self._run(result)
        finally:
            for d in self.drivers:
                d.stop()
        return result

    def _completed(self) -> int:
        ids = self.directory.job_ids()
        return len(self.directory.completed(ids[-1])) if ids else 0

    def _run(self, result: Failover) -> None:
        leader = self.start()
        _wait(lambda: leader.epoch() is not None or not leader.alive(), "the leader")
        standby = None
        if self.case != "restart":
            standby = self.start()
            _wait(lambda: standby.said_standby() or not standby.alive(), "the standby")
            # a standby started early is ready by the time its leader fails
            _wait(lambda: EARLY_CONTEXT_READY in standby.log(), "the standby's Spark", 60)
        _wait(lambda: self._completed() >= 2 or not leader.alive(), "two checkpoints")
        if not leader.alive():
            raise RuntimeError(f"the leader ended before the fault: {leader.log()[-2000:]}")
        result.fault_at = time.time()
        if self.case == "zombie":
            leader.signal(signal.SIGSTOP)
            time.sleep(3 * self.lease_s)
            _wait(lambda: standby.epoch() is not None, "the standby to lead", 60)
            leader.signal(signal.SIGCONT)
            woke_at = time.time()
        else:
            leader.kill()
        successor = standby or self.start()
        _wait(lambda: not any(d.alive() for d in self.drivers), "the drivers' end", 300)
        self._time(result, successor)
        zombie = None
        if self.case == "zombie":
            result.zombie_exit_s = leader.ended_at - woke_at
            zombie = DriverEnd(
                leader.number, leader.process.returncode, epoch=leader.epoch(),
                paused_at=result.fault_at, woke_to_end_s=result.zombie_exit_s,
                said_lost="lost leadership" in leader.log(),
            )  # fmt: skip
        result.problem = self._check(successor, zombie)

    def _time(self, result: Failover, successor: Driver) -> None:
        reports = glob.glob(os.path.join(self.base, f"report-{successor.pid}.json"))
        recoveries = RunReport.load(reports[0]).recoveries if reports else []
        first = recoveries[0] if recoveries else None
        if first is None or first.first_record_at is None:
            return
        result.record_s = first.first_record_at - result.fault_at
        leading = _logged_at(successor, "Leading cluster")
        if leading is not None:
            result.phases = {
                "takeover_s": leading - result.fault_at,
                "spark_s": first.submitted_at - leading,
                "first_record_s": first.first_record_at - first.submitted_at,
            }

    def _check(self, successor: Driver, zombie: DriverEnd | None) -> str:
        """Why the run is not as it should be ("" when it is): the output exactly-once, the
        successor ended well, the zombie as ``chaos_verdict`` holds a paused leader."""
        if successor.process.returncode != 0:
            return f"the new leader exited {successor.process.returncode}"
        try:
            odd_even.check_exactly_once(odd_even.read_committed(self.spec.base + "/out"), N)
        except AssertionError as e:
            return f"not exactly-once: {e}"
        if zombie is None:
            return ""
        job_id = self.directory.job_ids()[-1]
        history = self.directory.storage(job_id).read_history()
        checkpoints = tuple(
            CheckpointEpoch(job_id, r.checkpoint_id, r.leader_epoch, r.end_timestamp_ms / 1000)
            for r in history.records
            if r.status.value == "COMPLETED"
        )
        facts = RunFacts(
            returncode=0, log="", committed=[], drivers=(zombie,),
            final_driver=successor.number, checkpoints=checkpoints,
        )  # fmt: skip
        return driver_problem(facts) or ""


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summarize(case: str, runs: list[Failover], lease_s: float) -> dict:
    row: dict = {"case": case, "runs": len(runs), "goal": GOALS[case]}
    measured = {
        "record_s": [r.record_s for r in runs if r.record_s is not None],
        "zombie_exit_s": [r.zombie_exit_s for r in runs if r.zombie_exit_s is not None],
    }
    for phase in ("takeover_s", "spark_s", "first_record_s"):
        measured[phase] = [r.phases[phase] for r in runs if phase in r.phases]
    for name, values in measured.items():
        if values:
            row[f"{name}_median"] = round(statistics.median(values), 2)
            row[f"{name}_p99"] = round(_p(values, 0.99), 2)
    row["problems"] = [r.problem for r in runs if r.problem]
    row["lease_s"] = lease_s
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--lease-s", type=float, default=2.0)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tempfile.mkdtemp(prefix="barrierflow-failover-")
    figures = []
    for case in args.cases.split(","):
        runs = []
        for number in range(args.runs):
            run = FailoverRun(case, work, number, args.lease_s)
            try:
                runs.append(run.measure())
            except Exception as e:  # noqa: BLE001 - a broken run is reported, the others go on
                runs.append(Failover(case, problem=f"{type(e).__name__}: {e}"))
            r = runs[-1]
            print(
                f"{case} {number}: record {r.record_s and round(r.record_s, 2)} s "
                f"{ {k: round(v, 2) for k, v in r.phases.items()} }"
                + (f" zombie exit {r.zombie_exit_s:.2f} s" if r.zombie_exit_s else "")
                + (f" PROBLEM {r.problem}" if r.problem else ""),
                flush=True,
            )
        row = summarize(case, runs, args.lease_s)
        figures.append(row)
        print(
            f"{case} ({row['goal']}, lease {args.lease_s:g} s): fault -> first record median "
            f"{row.get('record_s_median')} s, p99 {row.get('record_s_p99')} s; medians: takeover "
            f"{row.get('takeover_s_median')} s, Spark and submission {row.get('spark_s_median')} "
            f"s, first record {row.get('first_record_s_median')} s"
            + (
                f"; zombie exit median {row['zombie_exit_s_median']} s, max "
                f"{row['zombie_exit_s_p99']} s"
                if "zombie_exit_s_median" in row
                else ""
            )
            + f"; problems: {len(row['problems'])}",
            flush=True,
        )
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"benchmark": "driver_failover", "figures": figures}))


if __name__ == "__main__":
    main()
