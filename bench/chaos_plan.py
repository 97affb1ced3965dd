"""What one campaign run does, drawn from its seed alone (``plan``): the job, the state backend,
the storage, one to three faults at random times, and sometimes bad input. The same seed
always gives the same plan, so that ``bench/chaos.py --seed S`` replays a run. The driver
high-availability kinds, then the rescaling ones, came last: a selection without them draws
what it drew before them.
A run that draws one of them runs its drivers under high availability (``RunPlan.cluster_id``).

Fault times are fractions of the failure-free run's duration, counted from its first completed
checkpoint; the runner turns them into seconds with the reference run's figures.

Performs no I/O.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass


class FaultKind(enum.Enum):
    KILL_TASK = "kill_task"  # SIGKILL of a random task process (a Spark Python worker)
    KILL_DRIVER = "kill_driver"  # SIGKILL of the driver's process group, then run --resume
    KILL_DURING_RESTORE = "kill_during_restore"  # a kill, then another as the restore begins
    STORAGE_ERROR = "storage_error"  # a checkpoint write or rename fails (EIO, ENOSPC)
    STORAGE_STALL = "storage_stall"  # a checkpoint write stalls past the checkpoint timeout
    RESTART_S3 = "restart_s3"  # the S3 server (moto) restarted
    RESTART_KAFKA = "restart_kafka"  # the Kafka broker restarted
    RESTART_POSTGRES = "restart_postgres"  # pg_ctl restart -m immediate
    CUT_CONNECTION = "cut_connection"  # a data connection between two slots cut
    CANCEL_WITH_SAVEPOINT = "cancel_with_savepoint"  # during a checkpoint; then run -s
    # Driver high availability (the run's drivers lead a cluster id by a lease, LEASE_S):
    KILL_DRIVER_RESTART = "kill_driver_restart"  # SIGKILL of the leader; the same command again
    KILL_DRIVER_STANDBY = "kill_driver_standby"  # a standby waits; SIGKILL of the leader
    PAUSE_LEADER = "pause_leader"  # a standby waits; the leader SIGSTOPped, PAUSE_LEASES leases
    # Rescaling a running job (barrierflow rescale JOB -p N, 2 -> 1 or 1 -> 2):
    RESCALE = "rescale"
    KILL_DURING_RESCALE = "kill_during_rescale"  # a task of the rescaled attempt, as it restores


HIGH_AVAILABILITY = frozenset(
    {FaultKind.KILL_DRIVER_RESTART, FaultKind.KILL_DRIVER_STANDBY, FaultKind.PAUSE_LEADER}
)
NEEDS_STANDBY = frozenset({FaultKind.KILL_DRIVER_STANDBY, FaultKind.PAUSE_LEADER})
LEASE_S = 2.0  # short, so that a standby's wait and a pause stay within a run of seconds
PAUSE_LEASES = 3  # a paused leader sleeps through this many of its lease's durations


class BadInput(enum.Enum):
    MALFORMED_KAFKA = "malformed_kafka"  # a message the deserialization schema refuses
    POISON = "poison"  # a record that makes a user function raise
    CORRUPT_STATE = "corrupt_state"  # a state file of the latest checkpoint corrupted


@dataclass(frozen=True)
class JobTraits:
    """What of a job decides which faults and bad input fit it."""

    name: str
    kafka: bool = False
    postgres: bool = False
    poison: bool = True


@dataclass(frozen=True)
class PlannedFault:
    kind: FaultKind
    at: float  # fraction of the reference duration after its first completed checkpoint
    detail: str = ""  # e.g. "write EIO chk-", "prepared", "down 1.2 s"

    def describe(self, seconds: float | None = None) -> str:
        when = f"{seconds:.1f}s" if seconds is not None else f"{self.at:.2f}"
        return f"{self.kind.value}@{when}" + (f"({self.detail})" if self.detail else "")


@dataclass(frozen=True)
class RunPlan:
    seed: int
    job: str
    backend: str  # hashmap | rocksdb
    storage: str  # local | s3
    faults: tuple[PlannedFault, ...]
    bad_input: BadInput | None = None
    bad_at: float = 0.0  # fraction of the input where a malformed or poison record sits

    @property
    def high_availability(self) -> bool:
        """Whether the run's drivers run under driver high availability."""
        return any(f.kind in HIGH_AVAILABILITY for f in self.faults)

    @property
    def needs_standby(self) -> bool:
        return any(f.kind in NEEDS_STANDBY for f in self.faults)

    def cluster_id(self, job_number: int) -> str:
        """The cluster id of the run's ``job_number``-th job (from 1): a job ended by a cancel
        does not run again under its cluster id, so ``run -s`` after it is a new one."""
        return f"chaos-{self.seed}" + (f"-{job_number}" if job_number > 1 else "")

    def describe(self) -> str:
        bad = f" bad={self.bad_input.value}@{self.bad_at:.2f}" if self.bad_input else ""
        ha = f" ha(lease {LEASE_S:g}s)" if self.high_availability else ""
        return f"{self.job} {self.backend} {self.storage}{ha}{bad}"


def compatible_faults(job: JobTraits, storage: str) -> list[FaultKind]:
    """The faults that can hit ``job``: a server restart only where the job uses it."""
    kinds = [
        FaultKind.KILL_TASK,
        FaultKind.KILL_DRIVER,
        FaultKind.KILL_DURING_RESTORE,
        FaultKind.STORAGE_ERROR,
        FaultKind.STORAGE_STALL,
        FaultKind.CUT_CONNECTION,
        FaultKind.CANCEL_WITH_SAVEPOINT,
    ]
    if storage == "s3":
        kinds.append(FaultKind.RESTART_S3)
    if job.kafka:
        kinds.append(FaultKind.RESTART_KAFKA)
    if job.postgres:
        kinds.append(FaultKind.RESTART_POSTGRES)
    # last, so that a selection without them draws what it drew before they came
    kinds += [FaultKind.KILL_DRIVER_RESTART, FaultKind.KILL_DRIVER_STANDBY, FaultKind.PAUSE_LEADER]
    kinds += [FaultKind.RESCALE, FaultKind.KILL_DURING_RESCALE]
    return kinds


def compatible_bad_input(job: JobTraits) -> list[BadInput]:
    found = [BadInput.CORRUPT_STATE]
    if job.kafka:
        found.append(BadInput.MALFORMED_KAFKA)
    if job.poison:
        found.append(BadInput.POISON)
    return found


def plan(
    seed: int,
    jobs: list[JobTraits],
    faults: list[FaultKind],
    bad_inputs: list[BadInput],
    bad_input_share: float = 0.2,
) -> RunPlan:
    """The run of ``seed``, among the ``jobs``, ``faults`` and ``bad_inputs`` selected. A job
    is drawn among those that at least one selected fault (or bad input) fits."""
    rng = random.Random(seed)
    wants_s3 = FaultKind.RESTART_S3 in faults
    fitting = [
        j
        for j in jobs
        if set(faults) & set(compatible_faults(j, "s3" if wants_s3 else "local"))
        or set(bad_inputs) & set(compatible_bad_input(j))
    ]
    if not fitting:
        raise ValueError("no selected job fits any selected fault or bad input")
    job = rng.choice(fitting)
    backend = rng.choice(["hashmap", "rocksdb"])
    storage = "s3" if rng.random() < 0.25 else "local"
    kinds_fit = [k for k in compatible_faults(job, storage) if k in faults]
    if not kinds_fit and wants_s3:
        storage = "s3"
        kinds_fit = [k for k in compatible_faults(job, storage) if k in faults]
    bad_fit = [b for b in compatible_bad_input(job) if b in bad_inputs]
    bad_input = None
    if bad_fit and (not kinds_fit or rng.random() < bad_input_share):
        bad_input = rng.choice(bad_fit)
    planned: list[PlannedFault] = []
    if kinds_fit:
        times = sorted(rng.uniform(0.05, 0.8) for _ in range(rng.randint(1, 3)))
        for at in times:
            kind = rng.choice(kinds_fit)
            planned.append(PlannedFault(kind, round(at, 3), _detail(rng, kind, backend, storage)))
    if storage == "local" and any(f.kind is FaultKind.RESTART_S3 for f in planned):
        storage = "s3"
    return RunPlan(
        seed, job.name, backend, storage, tuple(planned), bad_input, round(rng.uniform(0.3, 0.7), 3)
    )


def _detail(rng: random.Random, kind: FaultKind, backend: str, storage: str) -> str:
    """The variant of a fault: what fails and how, how long a server stays down."""
    if kind is FaultKind.STORAGE_ERROR:
        # Local storage publishes _metadata by a rename; object stores rename nothing.
        operation = rng.choice(["write", "rename"]) if storage == "local" else "write"
        error = rng.choice(["EIO", "ENOSPC"])
        if operation == "rename":
            return f"rename {error} _metadata"
        where = rng.choice(["chk-", "shared/"] if backend == "rocksdb" else ["chk-"])
        return f"write {error} {where}"
    if kind is FaultKind.STORAGE_STALL:
        return "write " + rng.choice(["chk-", "shared/"] if backend == "rocksdb" else ["chk-"])
    if kind in (FaultKind.RESTART_S3, FaultKind.RESTART_KAFKA):
        return f"down {rng.uniform(0, 3):.1f}s"
    if kind is FaultKind.RESTART_POSTGRES:
        return rng.choice(["prepared", "any time"])
    if kind in (FaultKind.KILL_TASK, FaultKind.KILL_DURING_RESTORE, FaultKind.KILL_DURING_RESCALE):
        return f"task {rng.randrange(1000)}"  # which of the task processes, modulo their count
    return ""
