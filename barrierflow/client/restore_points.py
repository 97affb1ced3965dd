"""The snapshot a job starts from: the one given to ``-s``, or, for ``run --resume``, the one
the job was first started from. Read once, before the job is submitted.

**I/O:** reads the snapshot's ``_metadata`` and the job directory's record of its ``-s``,
waiting for storage that is briefly unreachable (``with_storage_retries``).
"""

from __future__ import annotations

import logging

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointDirectory, locate_snapshot
from barrierflow.checkpoint.storage_layout import RESTORED_FROM_FILE
from barrierflow.checkpoint.storage_retry import with_storage_retries
from barrierflow.errors import ConfigurationError, CorruptCheckpointError, StorageConfigError

log = logging.getLogger("barrierflow")


def read_restore_point(path: str) -> tuple[CheckpointMetadata, str]:
    """The snapshot at ``path`` (``-s``): (its metadata, the URI its paths are relative to)."""
    try:
        root, metadata = _located(path)
        return metadata, root
    except (StorageConfigError, CorruptCheckpointError) as e:
        raise ConfigurationError(f"cannot restore from {path}: {e}") from e


def started_from(storage_uri: str) -> tuple[str | None, CheckpointMetadata | None, str | None]:
    """The snapshot a job to resume was started from (``-s``), if it was and it still reads:
    (its path, its metadata, the URI its paths are relative to). The JobMaster restores it
    only when the job completed no checkpoint of its own."""
    storage = CheckpointDirectory(storage_uri)
    data = with_storage_retries(
        lambda: storage.read_small_file(RESTORED_FROM_FILE), "read the restore path in", storage_uri
    )
    if not data:
        return None, None, None
    path = data.decode()
    try:
        root, metadata = _located(path)
    except (StorageConfigError, CorruptCheckpointError) as e:
        # needed only without a checkpoint of the job's own (CLAIM mode deletes it after one)
        log.info("The snapshot the job started from, %s, cannot be read any more: %s", path, e)
        return None, None, None
    return path, metadata, root


def _located(path: str) -> tuple[str, CheckpointMetadata]:
    """``locate_snapshot``, waiting for storage that is briefly down: a job started from a
    savepoint on S3 while the S3 server restarted must not end for good where the restart
    strategy of a running job would have carried it through."""
    return with_storage_retries(lambda: locate_snapshot(path), "read the snapshot", path)
