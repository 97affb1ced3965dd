"""PyFlink's checkpoint storage objects, for
``env.get_checkpoint_config().set_checkpoint_storage(FileSystemCheckpointStorage(path))``.

barrierflow has one kind of checkpoint storage: a file system (local, ``s3://``...) that the
tasks write their state to and the JobMaster its metadata. These objects choose its path and
the two thresholds Flink's file system storage has; ``JobManagerCheckpointStorage``, which in
Flink keeps checkpoints in the JobManager's memory, maps onto the same storage. Paths read
back as Flink's ``Path`` gives them, without a trailing slash. Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.errors import ConfigurationError

# Flink's defaults of execution.checkpointing.data-inline-threshold and .write-buffer-size,
# which a storage created without its own thresholds reads back
DEFAULT_FILE_STATE_THRESHOLD = 20 * 1024
DEFAULT_WRITE_BUFFER_SIZE = 4096


def _without_trailing_slash(path: str | None) -> str | None:
    """``path`` as Flink's ``Path`` reads back: no trailing slash (a root keeps its own)."""
    if path is None:
        return None
    stripped = path.rstrip("/")
    return stripped if stripped and not stripped.endswith(":") else path


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

    MAX_FILE_STATE_THRESHOLD = 1024 * 1024  # Flink's bound on file_state_size_threshold

    def get_checkpoint_path(self) -> str:
        return _without_trailing_slash(self.checkpoint_path)

    def get_min_file_size_threshold(self) -> int:
        """The threshold given, else Flink's default (20 KiB), as PyFlink reads it back."""
        threshold = self.file_state_size_threshold
        return DEFAULT_FILE_STATE_THRESHOLD if threshold is None or threshold < 0 else threshold

    def get_write_buffer_size(self) -> int:
        """The size given, else Flink's default (4096 bytes)."""
        size = self.write_buffer_size
        return DEFAULT_WRITE_BUFFER_SIZE if size < 0 else size


@dataclass(frozen=True)
class JobManagerCheckpointStorage(CheckpointStorage):
    """Flink keeps such checkpoints in the JobManager's memory (and their metadata under
    ``checkpoint_path`` if given). barrierflow's tasks always write their state to files:
    under ``checkpoint_path``, or, without one, under the system's temporary directory, which
    the job logs. ``max_state_size`` (default ``DEFAULT_MAX_STATE_SIZE``, 5 MiB, as Flink's)
    bounds the state Flink sends to the JobManager's memory; it is kept and read back, and
    bounds nothing here, where no state goes to the JobMaster's memory."""

    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024

    checkpoint_path: str | None = None
    max_state_size: int | None = None

    def __post_init__(self) -> None:
        size = self.max_state_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ConfigurationError(
                f"JobManagerCheckpointStorage: max_state_size must be a positive number of "
                f"bytes, got {size!r}"
            )

    def get_checkpoint_path(self) -> str | None:
        return _without_trailing_slash(self.checkpoint_path)

    def get_max_state_size(self) -> int:
        return self.DEFAULT_MAX_STATE_SIZE if self.max_state_size is None else self.max_state_size
