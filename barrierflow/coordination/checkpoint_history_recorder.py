"""The job's checkpoint history as the coordinator keeps it: a record of every checkpoint and
savepoint that ended, told to the statistics listener and written to storage
(``_history.json``), so that ``barrierflow checkpoints list`` shows it after the job.

**Threading:** the JobMaster's thread only; the history is written on the ``StorageIo`` (a copy,
taken on this thread). **I/O:** ``CoordinatorStorage.read_history`` on take-over, on this
thread; ``write_history`` on the ``StorageIo``, its failures logged: people read the history,
no restore does.
"""

from __future__ import annotations

import logging

from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.coordination.checkpoint_stats_listener import CheckpointStatsListener
from barrierflow.coordination.clock import Clock
from barrierflow.coordination.coordinator_storage import CoordinatorStorage
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint
from barrierflow.coordination.storage_io import StorageIo

log = logging.getLogger("barrierflow.checkpoint")


class CheckpointHistoryRecorder:
    def __init__(
        self,
        history: CheckpointHistory,
        storage: CoordinatorStorage,
        io: StorageIo,
        clock: Clock,
        listener: CheckpointStatsListener | None,
        leader_epoch: int = 0,
    ) -> None:
        """``history``: where records go, until ``take_over`` finds the job's own.
        ``leader_epoch``: recorded with each checkpoint (high availability)."""
        self.history = history
        self._leader_epoch = leader_epoch
        self._storage = storage
        self._io = io
        self._clock = clock
        self._listener = listener

    def take_over(self) -> None:
        """Goes on with the history a previous coordinator of this job left, if any."""
        history = self._storage.read_history()
        if history is not None and history.job_id == self.history.job_id:
            self.history = history

    def record(
        self,
        pending: PendingCheckpoint,
        status: CheckpointStatus,
        duration_ms: float,
        reason: str | None = None,
    ) -> CheckpointRecord:
        """Records that ``pending`` ended (``reason``: why it failed) ``duration_ms`` after it
        was triggered; returns the record."""
        record = _record_of(
            pending, status, self._clock.wall_ms(), duration_ms, reason, self._leader_epoch
        )
        self.history.add(record)
        if self._listener is not None:
            self._listener.checkpoint_recorded(record)
        history = CheckpointHistory(
            self.history.job_id, self.history.job_name, [*self.history.records]
        )

        def write() -> None:
            try:
                self._storage.write_history(history)
            except OSError as e:
                log.warning("Could not write the checkpoint history: %s", e)

        self._io.run(write)
        return record


def _record_of(
    pending: PendingCheckpoint,
    status: CheckpointStatus,
    end_timestamp_ms: int,
    duration_ms: float,
    reason: str | None,
    leader_epoch: int,
) -> CheckpointRecord:
    acks = list(pending.acknowledged.values())
    states = pending.acknowledged_states()
    cid = pending.checkpoint_id
    return CheckpointRecord(
        checkpoint_id=cid,
        status=status,
        trigger_timestamp_ms=pending.trigger_timestamp_ms,
        end_timestamp_ms=end_timestamp_ms,
        duration_ms=duration_ms,
        state_size=sum(s.state_size() for s in states),
        checkpointed_size=sum(s.checkpointed_size(cid) for s in states),
        num_tasks=len(pending.tasks_to_ack),
        num_acknowledged=len(acks),
        failure_reason=reason,
        subtasks=[a.stats for a in acks],
        kind=pending.options.kind,
        snapshot_format=pending.options.snapshot_format,
        external_path=pending.options.target_location or None,
        unaligned=any(a.stats.unaligned for a in acks),
        persisted_data=sum(a.stats.persisted_data for a in acks),
        processed_data=sum(a.stats.processed_data for a in acks),
        leader_epoch=leader_epoch,
    )
