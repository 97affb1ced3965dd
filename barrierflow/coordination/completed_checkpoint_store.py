"""The retained completed checkpoints, newest last; subsumes the oldest beyond the limit.

Performs no I/O: ``add`` returns what was subsumed, and the caller deletes its files.
"""

from __future__ import annotations

from barrierflow.checkpoint.metadata import CheckpointMetadata


class CompletedCheckpointStore:
    def __init__(self, max_retained: int = 1) -> None:
        if max_retained < 1:
            raise ValueError(f"num-retained must be at least 1, got {max_retained}")
        self._max_retained = max_retained
        self._checkpoints: list[CheckpointMetadata] = []

    def add(self, checkpoint: CheckpointMetadata) -> list[CheckpointMetadata]:
        """Adds a completed checkpoint and returns the ones it subsumed (oldest first)."""
        latest = self.latest()
        if latest is not None and checkpoint.checkpoint_id <= latest.checkpoint_id:
            raise ValueError(
                f"checkpoint {checkpoint.checkpoint_id} is not newer than {latest.checkpoint_id}"
            )
        self._checkpoints.append(checkpoint)
        excess = max(0, len(self._checkpoints) - self._max_retained)
        subsumed, self._checkpoints = self._checkpoints[:excess], self._checkpoints[excess:]
        return subsumed

    def latest(self) -> CheckpointMetadata | None:
        return self._checkpoints[-1] if self._checkpoints else None

    def all(self) -> list[CheckpointMetadata]:
        return list(self._checkpoints)
