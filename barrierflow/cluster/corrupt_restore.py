"""What a restore that met a corrupt file means for the next attempt: a retained checkpoint of
the job is not restored again (the next attempt falls back to an older one), once the file is
read back damaged; a snapshot given to restore from (``-s``) has no fallback, and no restart
would read it better.

A restore is told apart from the file: one cut short by a killed process or a closed
connection must not spend a good checkpoint, and so the fallbacks ``num-retained`` keeps.

**Threading:** the JobMaster's. **I/O:** reads the reported file back from checkpoint storage.
"""

from __future__ import annotations

import logging
import os
import tempfile

from barrierflow.checkpoint.fsck import references
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.attempt import Attempt, AttemptFailure
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator
from barrierflow.errors import CorruptCheckpointError

log = logging.getLogger("barrierflow.jobmaster")


def judge_corrupt_restore(
    attempt: Attempt,
    path: str,
    coordinator: CheckpointCoordinator,
    storage: CheckpointDirectory | None,
    restore_root_uri: str | None,
) -> None:
    """``attempt``'s restore reported ``path`` unusable: marks the retained checkpoint it
    restored unusable if the file reads back damaged, or makes the attempt's failure one no
    restart fixes if it restored a given snapshot."""
    restored = attempt.restored_checkpoint
    if restored is None:
        return
    retained = [c for c in coordinator.store.all() if c.checkpoint_id == restored]
    if retained:
        damage = _damage(storage, retained[0], path)
        if damage is None:
            log.warning(
                "Attempt %d reported %s of checkpoint %d unusable, but the file reads back "
                "intact: its restore was cut short, not the file damaged; checkpoint %d "
                "stays the one to restore",
                attempt.number,
                path,
                restored,
                restored,
            )
            return
        coordinator.restorable.mark_unusable(restored, f"its file {path} is corrupt ({damage})")
        return
    assert attempt.failure is not None  # the failure that reported the file
    attempt.failure = AttemptFailure(
        f"the snapshot to restore from ({restore_root_uri}, checkpoint "
        f"{restored}) has a corrupt file, {path}: restore from another savepoint or "
        f"retained checkpoint ({attempt.failure.error})",
        attempt.failure.traceback,
        recoverable=False,
    )


def _damage(
    storage: CheckpointDirectory | None, metadata: CheckpointMetadata, path: str
) -> str | None:
    """Why ``path``, a file a restore of ``metadata`` reported unusable, is, read back here;
    None when it reads back intact or the checkpoint does not name it."""
    if storage is None:
        return "reported by its restore"  # state in memory: nothing to read back
    named = [r.handle for r in references("", metadata) if path.endswith("/" + r.handle.path)]
    if not named:
        return None
    try:
        with tempfile.TemporaryDirectory() as local:  # streamed: a state file may be large
            storage.download_file(named[0], os.path.join(local, "read-back"))
    except CorruptCheckpointError as e:
        return e.reason
    except OSError as e:  # storage unreachable: not a verdict on the file
        log.warning("Could not read back %s to confirm it is damaged: %s", path, e)
        return None
    return None
