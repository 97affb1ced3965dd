"""CheckpointStatsListener: what the coordinator tells about each checkpoint as it goes, for
the REST API, the web UI and the metrics (Flink's ``CheckpointStatsTracker``).

The coordinator keeps no statistics of its own beyond its history; whoever shows them listens
here, so that metrics stay out of the protocol logic. Performs no I/O.

**Threading:** called on the coordinator's thread (the JobMaster's). A listener must return
quickly and must not call back into the coordinator.
"""

from __future__ import annotations

from typing import Protocol

from barrierflow.checkpoint.history import CheckpointRecord
from barrierflow.coordination.pending_checkpoint import TaskKey
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions


class CheckpointStatsListener(Protocol):
    def checkpoint_triggered(
        self,
        checkpoint_id: int,
        trigger_timestamp_ms: int,
        options: CheckpointOptions,
        num_tasks: int,
    ) -> None:
        """Checkpoint (or savepoint) ``checkpoint_id`` is pending from now on."""

    def checkpoint_acknowledged(self, checkpoint_id: int, task: TaskKey, ack_ms: int) -> None:
        """``task`` acknowledged it at wall-clock time ``ack_ms``."""

    def checkpoint_recorded(self, record: CheckpointRecord) -> None:
        """It completed or failed; ``record`` is what its history keeps of it."""
