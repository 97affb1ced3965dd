"""How a job ends, as its caller sees it: its status and the result of a finished job (the
errors of one that failed or was canceled are ``errors.py``'s). Performs no I/O."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from barrierflow.checkpoint.history import CheckpointRecord


class JobID(str):
    """A job's id, as PyFlink's ``JobID``: ``str(job_id)`` is its 32 hex digits."""

    __slots__ = ()


class JobStatus(enum.Enum):
    """PyFlink's states of a job, with PyFlink's values. barrierflow's JobMaster enters
    CREATED, RUNNING, RESTARTING and one of FINISHED, FAILED, CANCELED; the others are Flink's
    (FAILING and CANCELLING while tasks wind down, SUSPENDED and RECONCILING for a JobManager
    losing or regaining leadership), for programs that compare with them."""

    CREATED = 0
    RUNNING = 1
    FAILING = 2
    FAILED = 3
    CANCELLING = 4
    CANCELED = 5
    FINISHED = 6
    RESTARTING = 7
    SUSPENDED = 8
    RECONCILING = 9

    def is_globally_terminal_state(self) -> bool:
        """Whether the job is complete for good: it cannot fail any more nor be restarted or
        recovered (FINISHED, CANCELED, FAILED), so its recovery data may be dropped."""
        return self in _GLOBALLY_TERMINAL

    def is_terminal_state(self) -> bool:
        """Whether the job's execution stopped where it ran: the globally terminal states and
        SUSPENDED (stopped, but recoverable by another JobManager)."""
        return self in _GLOBALLY_TERMINAL or self is JobStatus.SUSPENDED


_GLOBALLY_TERMINAL = frozenset({JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED})


@dataclass(frozen=True)
class JobExecutionResult:
    job_id: str
    job_name: str
    attempts: int
    net_runtime_ms: int
    final_checkpoint: str | None  # path of the last completed checkpoint's _metadata
    checkpoint_ids: tuple[int, ...] = ()  # the retained ones
    num_completed_checkpoints: int = 0
    num_failed_checkpoints: int = 0
    checkpoint_history: tuple[CheckpointRecord, ...] = ()  # completed and failed, oldest first
    processing_ms: int = 0  # last attempt: all tasks running -> all tasks finished
    restores: tuple[RestoreStats, ...] = ()  # one per attempt that restored a checkpoint
    recoveries: tuple[RecoveryStats, ...] = ()  # the same attempts: how long they took

    def get_job_id(self) -> JobID:
        return JobID(self.job_id)

    def get_net_runtime(self) -> int:
        """The run time in milliseconds, all attempts and restarts included."""
        return self.net_runtime_ms

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """The value of the named accumulator, None when the job produced none of that name.
        barrierflow's jobs have no accumulators (its metrics are counters and gauges,
        ``barrierflow.metrics``), so this is always None, as PyFlink's is for a job without."""
        return self.get_all_accumulator_results().get(accumulator_name)

    def get_all_accumulator_results(self) -> dict[str, Any]:
        """Accumulator name -> value: empty, as PyFlink's for a job without accumulators
        (barrierflow's jobs have none)."""
        return {}


@dataclass(frozen=True)
class RecoveryStats:
    """How long an attempt that restored a checkpoint took to recover, in epoch seconds: the
    failure of the attempt before it (as the JobMaster saw it; None for the first attempt of a
    resumed or restored job), its submission, the first record one of its subtasks processed,
    and the end of its first completed checkpoint (None: none before the job ended)."""

    attempt: int
    checkpoint_id: int
    failed_at: float | None
    submitted_at: float
    first_record_at: float | None
    first_checkpoint_at: float | None


@dataclass(frozen=True)
class RestoreStats:
    """How an attempt restored its state: what it read from checkpoint storage (nothing when
    every subtask used its local copy) and how long the slowest subtask took."""

    attempt: int
    checkpoint_id: int
    bytes_read: int
    max_restore_ms: float
