"""What the checkpoint coordinator reads and writes of a job's checkpoint storage, and of the
directories of savepoints.

``checkpoint/storage.py``'s ``CheckpointDirectory`` implements it over any file system;
``barrierflow/testing``'s ``InMemoryCheckpointStorage`` in memory, for unit tests. Paths are
relative to the job's directory (``checkpoint/storage_layout.py``).

Obligations of an implementation: ``write_metadata`` is atomic (a reader sees the whole file or
none) and read-after-write; deletions of what does not exist succeed; errors of the medium
raise ``OSError``; an unreadable ``_metadata`` raises ``CorruptCheckpointError``.
"""

from __future__ import annotations

from typing import Protocol

from barrierflow.checkpoint.history import CheckpointHistory
from barrierflow.checkpoint.metadata import CheckpointMetadata


class CoordinatorStorage(Protocol):
    def write_metadata(self, metadata: CheckpointMetadata) -> str:
        """Writes ``chk-N/_metadata``, the completion marker; returns where."""

    def read_metadata(self, checkpoint_id: int) -> CheckpointMetadata: ...

    def list_completed(self) -> list[int]:
        """Ids that have a ``_metadata`` marker, oldest first."""

    def list_checkpoint_dirs(self) -> list[int]:
        """Ids of every ``chk-N`` directory, completed or not, oldest first."""

    def discard_checkpoint_dir(self, checkpoint_id: int) -> None: ...

    def list_shared(self) -> list[str]:
        """Every file under ``shared/``."""

    def delete_files(self, rel_paths: list[str]) -> None: ...

    def read_history(self) -> CheckpointHistory | None: ...

    def write_history(self, history: CheckpointHistory) -> None: ...


class SavepointStorage(Protocol):
    """Savepoint directories: ``<target>/savepoint-<first 6 of the job id>-<12 random hex>/``,
    holding every file of the savepoint and its ``_metadata``, by paths relative to it."""

    def create(self, target_dir: str, job_id: str) -> str:
        """A new, writable savepoint directory under ``target_dir``; its URI. Raises
        ``StorageConfigError`` naming the directory when it cannot be written."""

    def write_metadata(self, location: str, metadata: CheckpointMetadata) -> str:
        """Writes ``<location>/_metadata``, atomically; returns its path."""

    def discard(self, location: str) -> None:
        """Deletes the savepoint directory and everything in it."""

    def dispose(self, root: str, metadata: CheckpointMetadata) -> None:
        """Deletes a snapshot a job claimed (``execution.state-recovery.claim-mode: CLAIM``):
        a savepoint's directory, or a checkpoint's ``chk-N`` and the shared files it
        references, under ``root``."""
