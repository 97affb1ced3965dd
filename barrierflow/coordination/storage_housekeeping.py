"""The checkpoint coordinator's storage housekeeping: deleting what no checkpoint needs any more.

Directories of aborted and subsumed checkpoints and of failed savepoints, shared files the
registry let go, files no retained checkpoint references (swept when no task runs), and the
snapshot a job claimed, once its own checkpoints subsume it. What goes is decided elsewhere
(the completed store, the shared state registry, the coordinator); this carries it out in the
order it is asked, and logs what fails: a file left behind costs space, never a checkpoint, so
no deletion fails one, and the next sweep takes what a failed one left.

**Threading:** called on the JobMaster's thread only; the deletions run on the ``StorageIo``
(the JobMaster's storage I/O thread), after the work given before them. **I/O:** through
``CoordinatorStorage`` and ``SavepointStorage``, on the ``StorageIo``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.checkpoint_completion import Retention
from barrierflow.coordination.coordinator_storage import CoordinatorStorage, SavepointStorage
from barrierflow.coordination.storage_io import StorageIo

log = logging.getLogger("barrierflow.checkpoint")


@dataclass(frozen=True)
class ClaimedSnapshot:
    """The snapshot a job restored from in CLAIM mode: it owns it, and deletes it when its own
    checkpoints subsume it."""

    root: str  # what its paths are relative to
    metadata: CheckpointMetadata


class StorageHousekeeping:
    def __init__(
        self,
        storage: CoordinatorStorage,
        savepoint_storage: SavepointStorage,
        io: StorageIo,
        claimed: ClaimedSnapshot | None,
        num_retained: int,
    ) -> None:
        """``claimed``: the snapshot the job restored from in CLAIM mode, if any; it goes once
        ``num_retained`` checkpoints of the job's own are retained (it counts as the oldest)."""
        self._storage = storage
        self._savepoint_storage = savepoint_storage
        self._io = io
        self._claimed = claimed
        self._num_retained = num_retained

    def discard_checkpoint(self, checkpoint_id: int) -> None:
        """Deletes ``chk-N`` and everything in it."""

        def discard() -> None:
            try:
                self._storage.discard_checkpoint_dir(checkpoint_id)
            except OSError as e:
                log.warning("Could not delete the files of checkpoint %d: %s", checkpoint_id, e)

        self._io.run(discard)

    def discard_savepoint(self, location: str) -> None:
        """Deletes a failed savepoint's directory."""

        def discard() -> None:
            try:
                self._savepoint_storage.discard(location)
            except OSError as e:
                log.warning("Could not delete the failed savepoint's directory %s: %s", location, e)

        self._io.run(discard)

    def delete_shared(self, paths: list[str]) -> None:
        """Deletes shared files the registry let go."""
        if not paths:
            return

        def delete() -> None:
            try:
                self._storage.delete_files(paths)
            except OSError as e:
                log.warning(
                    "Could not delete %d shared file(s), e.g. %s: %s", len(paths), paths[0], e
                )

        self._io.run(delete)

    def let_go(self, retention: Retention) -> None:
        """Deletes what retaining a completed checkpoint let go: the shared files held for it
        alone, the directories of the checkpoints it subsumed, the shared files no retained
        checkpoint references any more, then the claimed snapshot if it is subsumed too."""
        self.delete_shared(retention.released)
        for checkpoint_id in retention.subsumed:
            self.discard_checkpoint(checkpoint_id)
        self.delete_shared(retention.unreferenced)
        if retention.num_retained >= self._num_retained:
            self._dispose_claimed()

    def sweep_orphans(self, retained: Collection[int], known: frozenset[str]) -> None:
        """Deletes what no retained checkpoint references: shared files the registry does not
        know (``known``) and ``chk-N`` directories of checkpoints not ``retained``, written by
        tasks that died before their checkpoint completed or aborted. Only when no task of the
        job runs (the JobMaster starts no attempt before its storage work is done)."""

        def sweep() -> None:
            try:
                orphans = [p for p in self._storage.list_shared() if p not in known]
                self._storage.delete_files(orphans)
                stale = [c for c in self._storage.list_checkpoint_dirs() if c not in retained]
                for cid in stale:
                    self._storage.discard_checkpoint_dir(cid)
            except OSError as e:
                log.warning("Could not sweep files of failed checkpoints: %s", e)
                return
            if orphans or stale:
                log.info(
                    "Deleted %d shared file(s) and %d checkpoint directories of checkpoints "
                    "that never completed",
                    len(orphans),
                    len(stale),
                )

        self._io.run(sweep)

    def _dispose_claimed(self) -> None:
        claimed = self._claimed
        if claimed is None:
            return
        self._claimed = None

        def dispose() -> None:
            try:
                self._savepoint_storage.dispose(claimed.root, claimed.metadata)
            except OSError as e:
                log.warning("Could not delete the claimed snapshot %s: %s", claimed.root, e)
                return
            log.info(
                "Deleted the claimed snapshot %s (checkpoint %d), subsumed",
                claimed.root,
                claimed.metadata.checkpoint_id,
            )

        self._io.run(dispose)
