"""When failed checkpoints fail the job (Flink's CheckpointFailureManager).

A checkpoint that fails for a reason of its own (a task declined it, it timed out, its metadata
could not be written, it referenced released files) counts; one aborted because a newer one
completed or arrived, or because its attempt ended, does not, and a savepoint never does (its
requester is told instead). The job fails when more than
``tolerable_failures`` counted failures follow each other; a completed checkpoint resets the
count. Performs no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from barrierflow.protocol.checkpoint_barrier import CheckpointOptions


class CheckpointFailureReason(enum.Enum):
    DECLINED = "declined"
    EXPIRED = "expired"
    FINALIZE_FAILED = "finalize failed"  # the metadata could not be written
    STALE_REFERENCE = "stale reference"  # it referenced shared files already released
    SUBSUMED = "subsumed"  # a newer checkpoint completed first
    ATTEMPT_ENDED = "attempt ended"  # the tasks stopped: the job restarts, ends or is canceled

    @property
    def counts(self) -> bool:
        return self not in (CheckpointFailureReason.SUBSUMED, CheckpointFailureReason.ATTEMPT_ENDED)


@dataclass(frozen=True, slots=True)
class FailJob:
    reason: str


class CheckpointFailureManager:
    def __init__(self, tolerable_failures: int) -> None:
        if tolerable_failures < 0:
            raise ValueError(f"tolerable failures must be >= 0, got {tolerable_failures}")
        self._tolerable = tolerable_failures
        self.consecutive_failures = 0
        self.num_failed = 0  # counted failures, over the whole job

    def failed(
        self,
        checkpoint_id: int,
        options: CheckpointOptions,
        reason: CheckpointFailureReason,
        detail: str,
    ) -> FailJob | None:
        if options.is_savepoint or not reason.counts:
            return None
        self.num_failed += 1
        self.consecutive_failures += 1
        if self.consecutive_failures <= self._tolerable:
            return None
        return FailJob(
            f"checkpoint {checkpoint_id} failed ({detail}); {self.consecutive_failures} "
            f"consecutive failures exceed tolerable-failed-checkpoints = {self._tolerable}"
        )

    def completed(self) -> None:
        self.consecutive_failures = 0
