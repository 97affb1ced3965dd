"""How a job ends, as its caller sees it: its status, the result of a finished job, and the
errors of one that failed or was canceled. Performs no I/O."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrierflow.checkpoint.history import CheckpointRecord


class JobStatus(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class JobExecutionError(Exception):
    """The job failed for good; the message is the last attempt's error."""

    def __init__(self, message: str, remote_traceback: str = "") -> None:
        text = (
            message if not remote_traceback else f"{message}\n\nTask traceback:\n{remote_traceback}"
        )
        super().__init__(text)
        self.remote_traceback = remote_traceback


class JobCanceledError(Exception):
    pass


class SavepointError(Exception):
    """A savepoint that could not be taken; the message says why."""


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

    def get_job_id(self) -> str:
        return self.job_id

    def get_net_runtime(self) -> int:
        return self.net_runtime_ms


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
