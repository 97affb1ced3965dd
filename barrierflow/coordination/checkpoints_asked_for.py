"""Who waits for a checkpoint asked for at once (``CheckpointCoordinator.checkpoint_now``: a
rescale checkpoints before it stops the job): each is answered once, with the first checkpoint
that completes after the ask, or with why the next one triggered for it failed, or why the
attempt ended. Performs no I/O.

**Threading:** the JobMaster's thread.
"""

from __future__ import annotations

from collections.abc import Callable

OnDone = Callable[[int | None, str | None], None]  # (checkpoint id, None) or (None, why)


class CheckpointsAskedFor:
    def __init__(self) -> None:
        self._waiters: list[OnDone] = []
        self._from_id = 0  # the first checkpoint id that may fail them

    def add(self, on_done: OnDone, next_id: int) -> None:
        """``next_id``: the id the next checkpoint triggered will have."""
        if not self._waiters:
            self._from_id = next_id
        self._waiters.append(on_done)

    def completed(self, checkpoint_id: int) -> None:
        self._answer(checkpoint_id, None)

    def failed(self, checkpoint_id: int, why: str) -> None:
        """A checkpoint failed: it fails those waiting if it was triggered for them."""
        if checkpoint_id >= self._from_id:
            self._answer(None, f"checkpoint {checkpoint_id} failed: {why}")

    def attempt_ended(self, why: str) -> None:
        self._answer(None, why)

    def _answer(self, checkpoint_id: int | None, why: str | None) -> None:
        waiters, self._waiters = self._waiters, []
        for on_done in waiters:
            on_done(checkpoint_id, why)
