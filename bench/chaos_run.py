"""One campaign run (``Run.execute``): the job program in a ``barrierflow run`` process, the
plan's faults injected on schedule, then the committed output compared with the failure-free
reference, record by record.

Steps:
  1. write the run's input and spec; start the driver;
  2. wait for the job's first completed checkpoint: the schedule's time zero;
  3. inject each fault at its time (a driver killed or canceled is replaced by
     ``run --resume`` or ``run -s SAVEPOINT``);
  4. wait for every driver to end, then judge (``chaos_verdict.judge``): the committed
     output equals the reference (or, with bad input, the expected clear error or fallback,
     and nothing lost), and every driver ended as it should. An injector that fails is noted
     on the run's line; the run is judged.

Under driver high availability (a plan that draws one of its faults), the faults act on the
leader (``chaos_drivers.py``): a killed leader is replaced by the same command again (or by a
standby already waiting); a paused leader is woken after ``PAUSE_LEASES`` lease durations and
must exit with status 4.

**I/O:** processes, servers, the run's directory under the campaign's work directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import time
from dataclasses import dataclass, field

import chaos_faults as faults
from chaos_drivers import Drivers
from chaos_faults import Driver, JobDirectory
from chaos_jobs.catalog import JOBS, Record, Servers
from chaos_jobs.spec import JobSpec, Recovery, RunReport
from chaos_plan import BadInput, FaultKind, PlannedFault, RunPlan
from chaos_verdict import FALLBACK_NOTE, CheckpointEpoch, RunFacts, Verdict, judge, one_line

from barrierflow.checkpoint.history import CheckpointRecord
from barrierflow.testing.channel_faults import ChannelCuts
from barrierflow.testing.storage_faults import (
    ArmedFault,
    StorageFault,
    StorageFaults,
    StorageOperation,
)

STALL_BEYOND_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Reference:
    """A failure-free run's committed output and how long it ran after its first checkpoint."""

    records: list[Record]
    duration_s: float


@dataclass
class Injection:
    fault: PlannedFault
    planned_s: float
    at: float | None = None  # epoch seconds; None: not injected (the job had ended)
    note: str = ""
    first_record_s: float | None = None  # fault -> first record of the next attempt
    first_checkpoint_s: float | None = None  # fault -> first checkpoint completed after

    def describe(self) -> str:
        text = self.fault.describe(self.planned_s)
        if self.at is None:
            return f"{text}[not injected: {self.note or 'the job had ended'}]"
        times = []
        if self.first_record_s is not None:
            times.append(f"record +{self.first_record_s:.2f}s")
        if self.first_checkpoint_s is not None:
            times.append(f"checkpoint +{self.first_checkpoint_s:.2f}s")
        extra = "; ".join(x for x in (one_line(self.note), ", ".join(times)) if x)
        return f"{text}[{extra}]" if extra else text


@dataclass
class RunResult:
    plan: RunPlan
    verdict: Verdict
    reason: str
    injections: list[Injection] = field(default_factory=list)
    duration_s: float = 0.0

    def line(self) -> str:
        faults_text = ", ".join(i.describe() for i in self.injections) or "none"
        reason = f" ({one_line(self.reason)})" if self.reason else ""
        return (
            f"seed={self.plan.seed} job={self.plan.describe()} faults=[{faults_text}] "
            f"outcome={self.verdict.value}{reason} took={self.duration_s:.0f}s"
        )


class Run:
    def __init__(
        self, plan: RunPlan, work_dir: str, servers: Servers, reference: Reference | None
    ) -> None:
        """``reference``: None for the failure-free run that makes one."""
        self.plan = plan
        self.job = JOBS[plan.job]
        self.base = os.path.join(work_dir, f"seed-{plan.seed}")
        self.servers = servers
        self.reference = reference
        self.drivers: Drivers | None = None
        self.job_id: str | None = None
        self.spec: JobSpec | None = None
        self.directory: JobDirectory | None = None
        self.t0: float | None = None  # the first completed checkpoint
        self.ended_at: float | None = None  # the last driver's end
        # The corrupted checkpoint was the only one retained: no fallback, the job must refuse
        self.corrupted_sole_checkpoint = False

    # --- 1. set up ---------------------------------------------------------------------------

    def _prepare(self) -> str:
        shutil.rmtree(self.base, ignore_errors=True)
        os.makedirs(self.base)
        plan = self.plan
        if plan.storage == "s3":
            checkpoint_dir = f"s3://{self.servers.s3.bucket('chaos')}/ckpt"
            s3 = self.servers.s3.configuration()
        else:
            checkpoint_dir, s3 = os.path.join(self.base, "ckpt"), {}
        malformed_at = poison = None
        if plan.bad_input is BadInput.MALFORMED_KAFKA:
            malformed_at = int(plan.bad_at * self.job.n)
        if plan.bad_input is BadInput.POISON:
            poison = int(plan.bad_at * self.job.n)
        spec = JobSpec(
            job=plan.job,
            backend=plan.backend,
            n=self.job.n,
            base=self.base,
            checkpoint_dir=checkpoint_dir,
            s3=s3,
            storage_faults=os.path.join(self.base, "storage-faults"),
            channel_cuts=os.path.join(self.base, "channel-cuts"),
            poison=poison,
            inline_threshold=0 if plan.bad_input is BadInput.CORRUPT_STATE else None,
        )
        self.spec = self.job.prepare(spec, self.servers, malformed_at)
        path = os.path.join(self.base, "spec.json")
        self.spec.dump(path)
        self.directory = JobDirectory(checkpoint_dir)
        return path

    # --- the whole run ------------------------------------------------------------------------

    def execute(self, timeout_s: float) -> RunResult:
        started = time.time()
        injections: list[Injection] = []
        try:
            self.drivers = Drivers(self.base, self._prepare(), self.plan)
            driver = self.drivers.start()
            if self.plan.needs_standby:  # early in the run, once the first driver leads
                self.drivers.leader()
                self.drivers.start()
            self.t0 = self._wait_for_first_checkpoint(driver, started + 180)
            if self.t0 is not None and self.reference is not None:
                self._inject_all(self.t0, injections)
            self._wait_for_end(started + timeout_s)
            self.ended_at = time.time()
            verdict, reason = self._judge()
        except Exception as e:  # noqa: BLE001 - a broken run is reported, the campaign goes on
            verdict, reason = Verdict.FAILED, f"{type(e).__name__}: {e}"
        finally:
            if self.drivers is not None:
                self.drivers.stop()
        # What follows only annotates the run's line: a failure in it is noted, never in place
        # of the verdict.
        for annotate in (self._time_recoveries, self._note_fired):
            try:
                annotate(injections)
            except Exception as e:  # noqa: BLE001 - noted on the run's line
                note = f"{annotate.__name__.strip('_')} failed: {type(e).__name__}: {e}"
                reason = f"{reason}; {note}" if reason else note
        return RunResult(self.plan, verdict, reason, injections, time.time() - started)

    def _wait_for_first_checkpoint(self, driver: Driver, deadline: float) -> float | None:
        """The schedule's time zero: the job's first completed checkpoint (None: the job
        ended first)."""
        while driver.alive() and time.time() < deadline:
            ids = self.directory.job_ids()
            if ids and self.directory.completed(ids[-1]):
                self.job_id = ids[-1]
                return time.time()
            time.sleep(0.02)
        ids = self.directory.job_ids()
        self.job_id = ids[-1] if ids else None
        return None

    def _wait_for_end(self, deadline: float) -> None:
        """Until every driver ended: the last leader, and standbys that found the job ended."""
        while self.drivers.running():
            if time.time() > deadline:
                alive = [f"{d.number} (pid {d.pid})" for d in self.drivers.all if d.alive()]
                raise TimeoutError(f"drivers {', '.join(alive)} did not end within the run's time")
            time.sleep(0.1)

    # --- 3. faults --------------------------------------------------------------------------

    def _schedule(self) -> list[PlannedFault]:
        planned = list(self.plan.faults)
        if self.plan.bad_input is BadInput.CORRUPT_STATE:
            planned.append(PlannedFault(FaultKind.KILL_TASK, self.plan.bad_at, "corrupt state"))
        return sorted(planned, key=lambda f: f.at)

    def _inject_all(self, t0: float, injections: list[Injection]) -> None:
        """Injects the schedule's faults, each noted in ``injections`` as it comes (kept if the
        run breaks off). An injector that fails is noted on its fault and the run goes on: the
        run is judged by its output all the same."""
        for fault in self._schedule():
            injection = Injection(fault, fault.at * self.reference.duration_s)
            injections.append(injection)
            while self.drivers.job_running() and time.time() < t0 + injection.planned_s:
                time.sleep(0.01)
            if not self.drivers.job_running():
                continue
            injection.at = time.time()
            try:
                injection.note = self._inject(fault)
            except Exception as e:  # noqa: BLE001 - noted on the run's line
                injection.note = f"injector failed: {type(e).__name__}: {e}"

    def _inject(self, fault: PlannedFault) -> str:
        drivers = self.drivers
        if fault.kind is FaultKind.PAUSE_LEADER:
            return drivers.pause_leader()
        standby = drivers.standby() if fault.kind is FaultKind.KILL_DRIVER_STANDBY else None
        driver = drivers.leader()
        kind = fault.kind
        choice = int(fault.detail.split()[-1]) if fault.detail.startswith("task") else 0
        if fault.detail == "corrupt state":
            retained = self.directory.storage(self.job_id).list_completed()
            corrupted = self.directory.corrupt_latest_state_file(self.job_id)
            self.corrupted_sole_checkpoint = corrupted is not None and len(retained) < 2
            pid = faults.kill_task(driver, choice)
            sole = ", the only checkpoint retained" if self.corrupted_sole_checkpoint else ""
            return f"corrupted {os.path.basename(corrupted or 'nothing')}{sole}, killed {pid}"
        if kind is FaultKind.KILL_TASK:
            return f"pid {faults.kill_task(driver, choice)}"
        if kind is FaultKind.KILL_DURING_RESTORE:
            return faults.kill_during_restore(driver, choice)
        if kind is FaultKind.KILL_DRIVER:
            resume = ["--resume", self.job_id]
            return drivers.kill(driver, lambda: drivers.start(resume))
        if kind is FaultKind.KILL_DRIVER_RESTART:
            return drivers.kill(driver, drivers.start)
        if kind is FaultKind.KILL_DRIVER_STANDBY:
            return drivers.kill(driver) + f", driver {standby.number} waited"
        if kind in (FaultKind.STORAGE_ERROR, FaultKind.STORAGE_STALL):
            return self._arm_storage(fault)
        if kind is FaultKind.RESTART_S3:
            self.servers.s3.restart(down_s=float(fault.detail.split()[1].rstrip("s")))
            return ""
        if kind is FaultKind.RESTART_KAFKA:
            self.servers.kafka.restart(down_s=float(fault.detail.split()[1].rstrip("s")))
            return ""
        if kind is FaultKind.RESTART_POSTGRES:
            hit = fault.detail != "prepared" or faults.wait_for_prepared(self.spec.postgres)
            self.servers.postgres.restart()
            return "" if hit else "no prepared transaction seen"
        if kind is FaultKind.CANCEL_WITH_SAVEPOINT:
            return self._cancel_with_savepoint(driver)
        if kind is FaultKind.CUT_CONNECTION:
            ChannelCuts(self.spec.channel_cuts).arm()
            return "armed"
        if kind in (FaultKind.RESCALE, FaultKind.KILL_DURING_RESCALE):
            kill = choice if kind is FaultKind.KILL_DURING_RESCALE else None
            conf = [arg for k, v in self.spec.s3.items() for arg in ("-D", f"{k}={v}")]
            return faults.rescale(driver, self.job_id, self.spec.checkpoint_dir, conf, kill)
        raise ValueError(f"no injector for {kind}")

    def _arm_storage(self, fault: PlannedFault) -> str:
        words = fault.detail.split()
        if fault.kind is FaultKind.STORAGE_STALL:
            stall_s = self.spec.checkpoint_timeout_ms / 1000 + STALL_BEYOND_TIMEOUT_S
            armed = ArmedFault(StorageOperation.WRITE, StorageFault.STALL, words[-1], stall_s)
        else:
            operation, error, where = words
            armed = ArmedFault(StorageOperation(operation), StorageFault(error), where)
        StorageFaults(self.spec.storage_faults).arm(armed)
        return "armed"

    def _cancel_with_savepoint(self, old: Driver) -> str:
        url = self.directory.rest_url(self.job_id)
        during = url is not None and faults.wait_for_checkpoint_in_progress(url, self.job_id)
        conf = [arg for k, v in self.spec.s3.items() for arg in ("-D", f"{k}={v}")]
        target = (
            f"{self.spec.checkpoint_dir.rsplit('/', 1)[0]}/savepoints"
            if self.plan.storage == "s3"
            else os.path.join(self.base, "savepoints")
        )
        path = faults.cancel_with_savepoint(self.job_id, self.spec.checkpoint_dir, target, conf)
        old.process.wait(60)
        known = set(self.directory.job_ids())
        driver = self.drivers.next_job(path)
        deadline = time.time() + 120
        while driver.alive() and time.time() < deadline:
            new = [j for j in self.directory.job_ids() if j not in known]
            if new:
                self.job_id = new[-1]
                break
            time.sleep(0.05)
        return "during a checkpoint" if during else "no checkpoint in progress seen"

    # --- 4. judge ---------------------------------------------------------------------------

    def _judge(self) -> tuple[Verdict, str]:
        driver = self.drivers.final()
        held_back, where = (
            self.job.held_back(self.spec, self.servers) if self.job.held_back else ([], "")
        )
        facts = RunFacts(
            returncode=driver.process.returncode,
            log=driver.log(),
            committed=self.job.committed(self.spec, self.servers),
            fell_back=any(FALLBACK_NOTE in d.log() for d in self.drivers.all),
            corrupted_sole_checkpoint=self.corrupted_sole_checkpoint,
            prepared_left=(
                tuple(faults.prepared_transactions(self.spec.postgres))
                if self.spec.postgres
                else ()
            ),
            held_back=tuple(held_back),
            held_back_where=where,
            drivers=self.drivers.ends(),
            final_driver=driver.number,
            checkpoints=tuple(
                CheckpointEpoch(job_id, r.checkpoint_id, r.leader_epoch, r.end_timestamp_ms / 1000)
                for job_id, r in self._completed_checkpoints()
            ),
        )
        expected = None if self.reference is None else self.reference.records
        return judge(facts, expected, self.plan.bad_input)

    def _note_fired(self, injections: list[Injection]) -> None:
        """Whether each armed fault fired, and where: a fault armed after the last write of
        a checkpoint, or the last frame, never does."""
        if self.spec is None:
            return
        storage = iter(StorageFaults(self.spec.storage_faults).fired())
        cuts = iter(ChannelCuts(self.spec.channel_cuts).fired())
        for injection in injections:
            if injection.note != "armed":
                continue
            if injection.fault.kind is FaultKind.CUT_CONNECTION:
                cut = next(cuts, None)
                injection.note = f"cut {cut['producer']} channel {cut['channel']}" if cut else ""
            else:
                fired = next(storage, None)
                injection.note = f"hit {os.path.basename(fired.path)}" if fired else ""
            injection.note = injection.note or "armed, never fired"

    # --- recovery times ---------------------------------------------------------------------

    def _time_recoveries(self, injections: list[Injection]) -> None:
        recoveries: list[Recovery] = []
        for path in sorted(glob.glob(os.path.join(self.base, "report-*.json"))):
            with contextlib.suppress(OSError, ValueError, KeyError):
                recoveries += RunReport.load(path).recoveries
        completions = self._checkpoint_completions()
        injected = [i for i in injections if i.at is not None]
        # A recovery answers the last fault before its submission (an earlier one may have
        # caused no restart: a stall, a server back in time).
        for recovery in sorted(recoveries, key=lambda r: r.submitted_at):
            before = [i for i in injected if i.at < recovery.submitted_at]
            if before and before[-1].first_record_s is None and recovery.first_record_at:
                before[-1].first_record_s = recovery.first_record_at - before[-1].at
        for injection in injected:
            later = [c for c in completions if c > injection.at]
            if later:
                injection.first_checkpoint_s = later[0] - injection.at

    def _checkpoint_completions(self) -> list[float]:
        """Epoch seconds at which the run's checkpoints completed, every job of the run."""
        return sorted(r.end_timestamp_ms / 1000 for _, r in self._completed_checkpoints())

    def _completed_checkpoints(self) -> list[tuple[str, CheckpointRecord]]:
        """Every job's completed checkpoints, as their histories record them."""
        found = []
        with contextlib.suppress(OSError):
            for job_id in self.directory.job_ids():
                history = self.directory.storage(job_id).read_history()
                if history is not None:
                    found += [(job_id, r) for r in history.records if r.status.value == "COMPLETED"]
        return found
