"""A campaign run's driver processes (``Drivers``): each ``barrierflow run`` of the run's job
program, started with the run's options, and which of them leads, waits or ended how.

Under driver high availability (a plan that draws one of its faults), every driver's command
names the run's cluster id (``RunPlan.cluster_id``; a new one after a cancel with a
savepoint), with its storage in the run's directory and a short lease; the leader is the live
driver that last said it leads; a standby is the same command started beside it, which says
it waits. A killed driver is noted with whatever of its session outlived it, a paused one with
its pause: the verdict holds them to how they must end (``chaos_verdict.driver_problem``).

**I/O:** processes and their logs under the run's directory, signals.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from chaos_faults import Driver
from chaos_plan import LEASE_S, PAUSE_LEASES, RunPlan
from chaos_verdict import ENDED_NOTE, DriverEnd, last_error

KILLED_GONE_WITHIN_S = 30.0  # every process of a killed driver's session has ended by then
LEADER_WAIT_S = 90.0  # for a driver to lead (a standby's wait, a restarted program's start)


def ha_options(base: str, cluster_id: str, lease_s: float = LEASE_S) -> list[str]:
    """The command line's options of a driver under high availability."""
    return [
        "-D", "high-availability.type=filesystem",
        "-D", f"high-availability.storageDir={os.path.join(base, 'ha')}",
        "-D", f"high-availability.cluster-id={cluster_id}",
        "-D", f"high-availability.filesystem.lease-duration={lease_s:g} s",
    ]  # fmt: skip


@dataclass
class Pause:
    """A leader SIGSTOPped: its epoch then, and when it was paused and woken (epoch seconds)."""

    epoch: int | None
    paused_at: float
    woke_at: float | None = None


class Drivers:
    def __init__(self, base: str, spec_path: str, plan: RunPlan) -> None:
        self.base = base
        self.spec_path = spec_path
        self.plan = plan
        self.all: list[Driver] = []
        self.job_number = 1  # a cancel with a savepoint ends a job; run -s starts the next
        self.command: list[str] = []  # the current job's arguments: [] or ["-s", SAVEPOINT]
        self.lingering: dict[int, list[int]] = {}  # killed driver's number -> processes left
        self.pauses: dict[int, Pause] = {}  # paused driver's number -> its pause

    def start(self, args: list[str] | None = None) -> Driver:
        """A driver of the current job: its command (``args``, by default the job's own)."""
        cluster_id = options = None
        if self.plan.high_availability:
            cluster_id = self.plan.cluster_id(self.job_number)
            options = ha_options(self.base, cluster_id)
        args = self.command if args is None else args
        number = len(self.all) + 1
        driver = Driver(self.base, self.spec_path, [*args, *(options or [])], number, cluster_id)
        self.all.append(driver)
        return driver

    def next_job(self, savepoint: str) -> Driver:
        """``run -s SAVEPOINT``: a new job, under high availability of a new cluster id (the
        canceled one's job ended, and is not run again under it)."""
        self.job_number += 1
        self.command = ["-s", savepoint]
        return self.start()

    def running(self) -> bool:
        """Whether any driver still runs (a paused leader that has not exited yet too)."""
        return any(d.alive() for d in self.all)

    def job_running(self) -> bool:
        """Whether a driver of the current job still runs, a paused leader aside."""
        return bool(self._current())

    def stop(self) -> None:
        for driver in self.all:
            driver.stop()

    def _current(self) -> list[Driver]:
        """The live drivers of the current job (of its cluster id, under high availability),
        but for a paused leader: it leads no more, whether or not it has exited yet."""
        cluster_id = self.plan.cluster_id(self.job_number)
        return [
            d
            for d in self.all
            if d.alive() and d.cluster_id in (None, cluster_id) and d.number not in self.pauses
        ]

    def leader(self, timeout_s: float = LEADER_WAIT_S) -> Driver:
        """The driver that runs the job now: without high availability the last one started;
        with it, the live driver of the current cluster id that leads the newest epoch, once
        one does (a standby taking over, a program started again)."""
        if not self.plan.high_availability:
            return self.all[-1]
        deadline = time.time() + timeout_s
        while True:
            current = self._current()
            leading = [d for d in current if d.epoch() is not None]
            if leading or not current or time.time() > deadline:
                break
            time.sleep(0.05)
        if not leading:
            cluster_id = self.plan.cluster_id(self.job_number)
            why = "the job had ended" if not current else f"none led within {timeout_s:g} s"
            raise TimeoutError(f"no driver of {cluster_id} leads: {why}")
        return max(leading, key=lambda d: d.epoch())

    def standby(self) -> Driver:
        """A driver of the current cluster id that waits as a standby: one already waiting,
        else the same command started now."""
        self.leader()  # first: a driver that does not lead yet while none does is no standby
        waiting = [d for d in self._current() if d.epoch() is None]
        driver = waiting[0] if waiting else self.start()
        deadline = time.time() + LEADER_WAIT_S
        while (
            driver.alive()
            and not driver.said_standby()
            and driver.epoch() is None
            and time.time() < deadline
        ):
            time.sleep(0.05)
        if driver.epoch() is not None:  # the lease was free: the job's leader had ended
            raise RuntimeError(f"driver {driver.number} led at once: the job had ended")
        if not driver.said_standby():
            raise RuntimeError(f"driver {driver.number} did not say it waits as a standby")
        return driver

    def kill(self, driver: Driver, then: Callable[[], object] = lambda: None) -> str:
        """SIGKILL of ``driver``'s process group, ``then`` at once; whatever of its session
        outlives it is noted (the verdict holds it against the run)."""
        epoch = driver.epoch()
        driver.kill()
        then()
        killed_at = time.time()
        left = driver.lingering(KILLED_GONE_WITHIN_S)
        self.lingering[driver.number] = left
        gone = f"{len(left)} processes left" if left else f"gone in {time.time() - killed_at:.1f}s"
        led = f" epoch {epoch}" if epoch is not None else ""
        return f"driver {driver.number}{led} killed, {gone}"

    def pause_leader(self) -> str:
        """SIGSTOP of the leader's process group for ``PAUSE_LEASES`` lease durations, a
        standby waiting beside it; SIGCONT once the standby leads (or a minute later)."""
        standby = self.standby()
        leader = self.leader()
        pause = Pause(leader.epoch(), time.time())
        self.pauses[leader.number] = pause
        leader.signal(signal.SIGSTOP)
        try:
            time.sleep(PAUSE_LEASES * LEASE_S)
            deadline = time.time() + 60
            while standby.alive() and standby.epoch() is None and time.time() < deadline:
                time.sleep(0.05)
        finally:
            leader.signal(signal.SIGCONT)
            pause.woke_at = time.time()
        took = standby.epoch()
        return (
            f"driver {leader.number} epoch {pause.epoch} paused "
            f"{pause.woke_at - pause.paused_at:.1f}s, driver {standby.number} "
            + (f"led as epoch {took} by then" if took else "did not lead by then")
        )

    def final(self) -> Driver:
        """The driver that ran the job to its end: the last one started, or, under high
        availability, the one that led the newest epoch and did not find the job ended."""
        if not self.plan.high_availability:
            return self.all[-1]
        ran = [
            d
            for d in self.all
            if d.cluster_id == self.plan.cluster_id(self.job_number)
            and d.epoch() is not None
            and ENDED_NOTE not in d.log()
        ]
        return max(ran, key=lambda d: d.epoch()) if ran else self.all[-1]

    def ends(self) -> tuple[DriverEnd, ...]:
        """How each driver ended, for the verdict."""
        ends = []
        for d in self.all:
            pause = self.pauses.get(d.number)
            log = d.log()
            ends.append(
                DriverEnd(
                    number=d.number,
                    returncode=d.process.returncode,
                    killed=d.number in self.lingering,
                    lingering=tuple(self.lingering.get(d.number, ())),
                    epoch=d.epoch(),
                    paused_at=pause.paused_at if pause else None,
                    woke_to_end_s=(
                        d.ended_at - pause.woke_at
                        if pause and pause.woke_at and d.ended_at
                        else None
                    ),
                    said_lost="lost leadership" in log,
                    last_error=last_error(log),
                )
            )
        return tuple(ends)
