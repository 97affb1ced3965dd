"""Savepoints, from request to completion: each asked for into a new directory of its own,
completed by writing its ``_metadata`` there, its requester answered once, with the path or why
it failed.

A savepoint goes its own way (``docs/adr/0005-savepoints.md``): its files are all in its
directory (nothing shared, nothing registered), it is never retained, subsumed or used for
failover, and its failure fails nothing but the request. Only a savepoint that ends the job
(stop) tells the tasks it completed, so a savepoint taken while the job goes on commits nothing.
The decider queues the requests and says when to trigger one; the coordinator triggers, collects
acknowledgements and aborts as for any checkpoint, and hands a savepoint here where it differs.

**Threading:** the JobMaster's thread only; requesters are answered on it. **I/O:**
``SavepointStorage``: a request's directory is made, and a withdrawn request's deleted, on this
thread; the ``_metadata`` is written on the ``StorageIo`` (``CompletionMarker``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.checkpoint_history_recorder import CheckpointHistoryRecorder
from barrierflow.coordination.checkpoint_request_decider import (
    CheckpointRequest,
    CheckpointRequestDecider,
    RequestKind,
)
from barrierflow.coordination.completion_marker import CompletionMarker
from barrierflow.coordination.coordinator_storage import SavepointStorage
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint
from barrierflow.coordination.storage_housekeeping import StorageHousekeeping
from barrierflow.errors import StorageConfigError
from barrierflow.human_units import human_bytes
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)

log = logging.getLogger("barrierflow.checkpoint")


@dataclass(frozen=True)
class SavepointResult:
    """What the requester of a savepoint is told, once: where it is, or why it failed."""

    checkpoint_id: int | None
    path: str | None = None
    error: str | None = None


Requester = Callable[[SavepointResult], None]


class SavepointCompletion:
    def __init__(
        self,
        storage: SavepointStorage,
        decider: CheckpointRequestDecider,
        marker: CompletionMarker,
        housekeeping: StorageHousekeeping,
        history: CheckpointHistoryRecorder,
        notify_complete: Callable[[int], None],
    ) -> None:
        """``notify_complete``: tells every task and operator coordinator that a savepoint
        that ends the job completed."""
        self._storage = storage
        self._decider = decider
        self._marker = marker
        self._housekeeping = housekeeping
        self._history = history
        self._notify_complete = notify_complete
        self._queued: dict[CheckpointRequest, Requester] = {}
        self._triggered: dict[int, Requester] = {}

    def request(
        self,
        job_id: str,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        kind: CheckpointKind,
        on_done: Requester,
    ) -> None:
        """Queues a savepoint of ``kind`` into a new directory under ``target_dir``; ``on_done``
        is called once: at once if the directory cannot be made, else when it ended."""
        if target_dir is None:
            on_done(
                SavepointResult(
                    None,
                    error="no savepoint directory: give a target directory or set "
                    "execution.checkpointing.savepoint-dir",
                )
            )
            return
        try:
            location = self._storage.create(target_dir, job_id)
        except (StorageConfigError, OSError) as e:
            on_done(SavepointResult(None, error=str(e)))
            return
        request = CheckpointRequest(
            RequestKind.SAVEPOINT,
            CheckpointOptions(kind, snapshot_format, target_location=location),
        )
        self._queued[request] = on_done
        self._decider.request_savepoint(request)
        log.info("Savepoint requested into %s (%s)", location, snapshot_format.value)

    def triggered(self, request: CheckpointRequest, checkpoint_id: int) -> None:
        self._triggered[checkpoint_id] = self._queued.pop(request)

    def attempt_started(self) -> None:
        """A queued stop fails (the tasks it would have stopped are gone); savepoints stay."""
        for request in self._decider.queued_savepoints():
            if request.options.ends_job:
                self._withdraw(request, "the job restarted before it stopped; stop it again")

    def shutdown(self, reason: str) -> None:
        """The job ended: every request still queued fails."""
        for request in self._decider.queued_savepoints():
            self._withdraw(request, reason)

    def complete(self, pending: PendingCheckpoint, metadata: CheckpointMetadata) -> None:
        """Completes a savepoint every task acknowledged: writes its ``_metadata`` into its
        directory; once written, records it, tells the tasks only if it ends the job, and
        answers its requester."""
        location = pending.options.target_location
        self._marker.write(
            pending,
            lambda: self._storage.write_metadata(location, metadata),
            lambda now, duration_ms: self._completed(pending, now, duration_ms),
            discard=lambda: self._housekeeping.discard_savepoint(location),
        )

    def failed(self, checkpoint_id: int, detail: str) -> None:
        """Savepoint ``checkpoint_id`` was aborted (its directory is being deleted)."""
        self._triggered.pop(checkpoint_id)(
            SavepointResult(checkpoint_id, error=f"savepoint {checkpoint_id} failed: {detail}")
        )

    def _completed(self, pending: PendingCheckpoint, now: float, duration_ms: float) -> None:
        cid, options = pending.checkpoint_id, pending.options
        location = options.target_location
        self._decider.completed(options, now)
        record = self._history.record(pending, CheckpointStatus.COMPLETED, duration_ms)
        log.info(
            "Completed savepoint %d (%s, %s) in %.0f ms: %s, %d tasks. Path: %s",
            cid,
            options.kind.value,
            options.snapshot_format.value,
            record.duration_ms,
            human_bytes(record.state_size),
            record.num_tasks,
            location,
        )
        if options.commits:
            self._notify_complete(cid)
        self._triggered.pop(cid)(SavepointResult(cid, path=location))

    def _withdraw(self, request: CheckpointRequest, reason: str) -> None:
        self._decider.withdraw(request)
        self._storage.discard(request.options.target_location)
        self._queued.pop(request)(SavepointResult(None, error=reason))
