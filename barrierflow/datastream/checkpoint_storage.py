"""PyFlink's ``pyflink.datastream.checkpoint_storage``."""

from barrierflow.api.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

__all__ = ["CheckpointStorage", "FileSystemCheckpointStorage", "JobManagerCheckpointStorage"]
