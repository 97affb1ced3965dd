"""PyFlink's checkpoint storage objects, for
``env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(path))``.

barrierflow has one kind of checkpoint storage: a file system (local, ``s3://``...) that the
tasks write their state to and the JobMaster its metadata. These objects choose its path and
the two thresholds Flink's file system storage has; ``JobManagerCheckpointStorage``, which in
Flink keeps checkpoints in the JobManager's memory, maps onto the same storage and refuses
what cannot apply. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.errors import ConfigurationError


class CheckpointStorage:
    """Where checkpoints are written (``set_checkpoint_storage``)."""

    def get_checkpoint_path(self) -> str | None:
        raise NotImplementedError

    def get_savepoint_path(self) -> str | None:
        """Savepoints go where ``execution.checkpointing.savepoint-dir`` (or the savepoint
        command) says, not under the checkpoint storage."""
        return None


@dataclass(frozen=True)
class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints under ``checkpoint_path`` (a path or a ``file://``, ``s3://``... URI).
    ``file_state_size_threshold``: state streams smaller than this many bytes go into the
    checkpoint's metadata instead of files of their own; ``write_buffer_size``: the bytes
    buffered before a state file is written. -1 keeps the configured value of each."""

    checkpoint_path: str
    file_state_size_threshold: int | None = None
    write_buffer_size: int = -1

    def __post_init__(self) -> None:
        if not isinstance(self.checkpoint_path, str) or not self.checkpoint_path.strip():
            raise ValueError(f"checkpoint_path must be a path or URI, got {self.checkpoint_path!r}")

    def get_checkpoint_path(self) -> str:
        return self.checkpoint_path

    def get_min_file_size_threshold(self) -> int:
        return -1 if self.file_state_size_threshold is None else self.file_state_size_threshold

    def get_write_buffer_size(self) -> int:
        return self.write_buffer_size


@dataclass(frozen=True)
class JobManagerCheckpointStorage(CheckpointStorage):
    """Flink keeps such checkpoints in the JobManager's memory (and their metadata under
    ``checkpoint_path`` if given). barrierflow's tasks always write their state to files:
    under ``checkpoint_path``, or, without one, under the system's temporary directory, which
    the job logs. ``max_state_size``, a bound on the state sent to the JobManager's memory,
    has no counterpart and is refused."""

    checkpoint_path: str | None = None
    max_state_size: int | None = None

    def __post_init__(self) -> None:
        if self.max_state_size is not None:
            raise ConfigurationError(
                "JobManagerCheckpointStorage(max_state_size=...): barrierflow's tasks write "
                "their state to checkpoint storage, never into the JobMaster's memory, so "
                "there is no state size to bound; leave max_state_size out"
            )

    def get_checkpoint_path(self) -> str | None:
        return self.checkpoint_path

    def get_max_state_size(self) -> int | None:
        return self.max_state_size
