"""Which retained checkpoint the next attempt restores: the newest whose metadata reads back
intact and whose files no restore found corrupt, falling back to older ones.

**Threading:** the JobMaster's. **I/O:** reads the candidates' metadata.
"""

from __future__ import annotations

import logging

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.coordinator_storage import CoordinatorStorage
from barrierflow.errors import CorruptCheckpointError

log = logging.getLogger("barrierflow.checkpoint")


class RestorableCheckpoints:
    def __init__(self, store: CompletedCheckpointStore, storage: CoordinatorStorage) -> None:
        self._store = store
        self._storage = storage
        self._unusable: set[int] = set()  # retained, but a restore found a file corrupt

    def mark_unusable(self, checkpoint_id: int, reason: str) -> None:
        """A restore of ``checkpoint_id`` found one of its files corrupt: no restore picks it
        again (``latest`` falls back to an older one)."""
        self._unusable.add(checkpoint_id)
        log.error(
            "Checkpoint %d cannot be restored (%s); falling back to an older checkpoint",
            checkpoint_id,
            reason,
        )

    def latest(self) -> CheckpointMetadata | None:
        """The newest retained checkpoint whose metadata reads back intact and whose files no
        restore found corrupt; falls back to older ones."""
        for candidate in reversed(self._store.all()):
            if candidate.checkpoint_id in self._unusable:
                continue
            try:
                return self._storage.read_metadata(candidate.checkpoint_id)
            except CorruptCheckpointError as e:
                log.error("%s; falling back to an older checkpoint", e)
        return None
