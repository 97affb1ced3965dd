"""What a new coordinator reads of the checkpoints a previous one of the same job left, when it
takes the job over after the driver died (``barrierflow run --resume``): the retained
checkpoints that read back, and the first checkpoint id nobody used.

**Threading:** the JobMaster's thread, before the first attempt. **I/O:** reads the job's
checkpoint storage through ``CoordinatorStorage``, on the caller's thread.
"""

from __future__ import annotations

import logging

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.coordinator_storage import CoordinatorStorage
from barrierflow.errors import CorruptCheckpointError

log = logging.getLogger("barrierflow.checkpoint")


def read_retained(storage: CoordinatorStorage, num_retained: int) -> list[CheckpointMetadata]:
    """The newest ``num_retained`` completed checkpoints whose metadata reads back, oldest
    first; one that does not is logged and passed over."""
    retained: list[CheckpointMetadata] = []
    for checkpoint_id in reversed(storage.list_completed()):
        if len(retained) == num_retained:
            break
        try:
            retained.append(storage.read_metadata(checkpoint_id))
        except CorruptCheckpointError as e:
            log.error("%s; not taken over", e)
    return retained[::-1]


def first_unused_id(storage: CoordinatorStorage, history: CheckpointHistory, next_id: int) -> int:
    """The checkpoint id after ``next_id - 1`` and every id already used: by a ``chk-N``
    directory, in the history, or in a shared file's name (also a killed attempt's tries, which
    left no directory)."""
    used = [
        *storage.list_checkpoint_dirs(),
        *(r.checkpoint_id for r in history.records),
        *(
            cid
            for cid in map(layout.parse_shared_state_file, storage.list_shared())
            if cid is not None
        ),
    ]
    return max([next_id - 1, *used]) + 1
