"""When to trigger the next periodic checkpoint: interval, min pause, max concurrent.

Takes facts (now, pending count, last completion time) and returns a decision; holds no clock.
Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TriggerNow:
    pass


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Check again at ``deadline_s`` (same clock as ``now_s``), or when a checkpoint ends."""

    deadline_s: float


TriggerDecision = TriggerNow | WaitUntil


@dataclass(frozen=True, slots=True)
class TriggerPolicy:
    interval_s: float
    min_pause_s: float = 0.0
    max_concurrent: int = 1

    def decide(
        self,
        now_s: float,
        last_trigger_s: float | None,
        last_completion_s: float | None,
        num_pending: int,
        urgent: bool = False,
    ) -> TriggerDecision | None:
        """``None`` means: wait until a pending checkpoint ends.

        ``urgent`` (e.g. the sources finished and a final checkpoint is due) skips the interval
        but not max concurrent or min pause.
        """
        if num_pending >= self.max_concurrent:
            return None
        deadline = now_s
        if last_trigger_s is not None and not urgent:
            deadline = max(deadline, last_trigger_s + self.interval_s)
        if self.min_pause_s > 0:
            if num_pending > 0:
                return None  # min pause means one checkpoint at a time
            if last_completion_s is not None:
                deadline = max(deadline, last_completion_s + self.min_pause_s)
        return TriggerNow() if deadline <= now_s else WaitUntil(deadline)
