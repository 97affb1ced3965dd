"""Writing the completion marker of a checkpoint or savepoint (its ``_metadata``) off the
JobMaster's thread, and going on with its completion once the marker is on storage.

While its marker is written, the checkpoint stays pending and ``finalizing`` (no timeout applies:
every task did its part; what remains is the coordinator's own write), so that an attempt that
ends meanwhile still aborts it. When the write returns, on the JobMaster's thread: a checkpoint
aborted meanwhile has what was written deleted again; a failed write aborts it; otherwise it
stops being pending and its completion goes on.

**Threading:** ``write`` on the JobMaster's thread; the write on the ``StorageIo``; what follows
back on the JobMaster's thread. **I/O:** the write it is given, on the ``StorageIo``.
"""

from __future__ import annotations

from collections.abc import Callable

from barrierflow.coordination.clock import Clock
from barrierflow.coordination.pending_checkpoint import PendingCheckpoint, PendingCheckpoints
from barrierflow.coordination.storage_io import StorageIo


class CompletionMarker:
    def __init__(
        self,
        pending: PendingCheckpoints,
        io: StorageIo,
        clock: Clock,
        failed: Callable[[int, str], None],
    ) -> None:
        """``failed(checkpoint_id, detail)``: aborts a checkpoint whose marker could not be
        written."""
        self._pending = pending
        self._io = io
        self._clock = clock
        self._failed = failed

    def write(
        self,
        pending: PendingCheckpoint,
        write: Callable[[], object],
        then: Callable[[float, float], None],
        discard: Callable[[], None],
    ) -> None:
        """Writes the marker with ``write`` (off this thread), then ends ``pending`` as pending
        and calls ``then(now, its duration in ms)``. Aborts it instead when the marker cannot be
        written; ``discard``s what was written when it was aborted meanwhile (the attempt
        ended, or the job)."""
        cid = pending.checkpoint_id
        pending.finalizing = True

        def written(error: BaseException | None) -> None:
            if self._pending.get(cid) is not pending:  # aborted while its marker was written
                if error is None:
                    discard()
                return
            if error is not None:
                self._failed(cid, f"writing its metadata failed: {error}")
                return
            now = self._clock.monotonic_s()
            duration_ms = self._pending.elapsed_s(cid, now) * 1000
            self._pending.remove(cid)
            then(now, duration_ms)

        self._io.run(write, written)
