"""How long recoveries take: per attempt that restored a checkpoint, when the attempt before it
failed, when it was submitted, when its first record was processed (the earliest first-record
time its subtasks report with their metrics) and when its first checkpoint completed.

Times are epoch seconds: a first record is timed on an executor, so the figures compare across
hosts as well as their clocks agree. Holds no clock (calls take the times); logs each
recovery's first record.

**Threading:** the JobMaster's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.cluster.job_outcome import RecoveryStats
from barrierflow.control.messages import SubtaskMetrics

log = logging.getLogger("barrierflow.jobmaster")


@dataclass
class _Recovering:
    attempt: int
    checkpoint_id: int
    failed_at: float | None
    submitted_at: float
    first_record_at: float | None = None


class RecoveryTimes:
    def __init__(self) -> None:
        self._failed_at: float | None = None
        self._attempts: dict[int, _Recovering] = {}

    def attempt_failed(self, at: float) -> None:
        """The running attempt failed (the JobMaster saw it fail) at ``at``."""
        self._failed_at = at

    def attempt_submitted(self, attempt: int, checkpoint_id: int | None, at: float) -> None:
        """``checkpoint_id``: what it restores (None: a fresh start, no recovery)."""
        if checkpoint_id is not None:
            self._attempts[attempt] = _Recovering(attempt, checkpoint_id, self._failed_at, at)
        self._failed_at = None

    def subtasks_sampled(self, attempt: int, metrics: Iterable[SubtaskMetrics]) -> None:
        """A slot's heartbeat: its subtasks' metrics, with the time of each one's first
        record once it had one."""
        recovering = self._attempts.get(attempt)
        if recovering is None:
            return
        known = recovering.first_record_at
        for m in metrics:
            if m.first_record_at is not None and (
                recovering.first_record_at is None or m.first_record_at < recovering.first_record_at
            ):
                recovering.first_record_at = m.first_record_at
        if known is None and recovering.first_record_at is not None:
            since = (
                f"{recovering.first_record_at - recovering.failed_at:.2f} s after the failure, "
                if recovering.failed_at is not None
                else ""
            )
            log.info(
                "Attempt %d processed its first record %s%.2f s after it was submitted",
                attempt,
                since,
                recovering.first_record_at - recovering.submitted_at,
            )

    def first_record_at(self, attempt: int) -> float | None:
        """When ``attempt`` (one that restored a checkpoint) processed its first record."""
        recovering = self._attempts.get(attempt)
        return None if recovering is None else recovering.first_record_at

    def stats(self, history: Iterable[CheckpointRecord]) -> tuple[RecoveryStats, ...]:
        """Every recovery so far; its first checkpoint from the checkpoint history."""
        completed = sorted(
            (r.trigger_timestamp_ms / 1000, r.end_timestamp_ms / 1000)
            for r in history
            if r.status is CheckpointStatus.COMPLETED
        )
        found = []
        for r in sorted(self._attempts.values(), key=lambda r: r.attempt):
            after = (end for triggered, end in completed if triggered >= r.submitted_at)
            first_checkpoint = next(after, None)
            found.append(
                RecoveryStats(
                    r.attempt,
                    r.checkpoint_id,
                    r.failed_at,
                    r.submitted_at,
                    r.first_record_at,
                    first_checkpoint,
                )
            )
        return tuple(found)
