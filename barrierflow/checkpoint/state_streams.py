"""The task's side of checkpoint storage, as state backends see it: streams to write during
a snapshot's asynchronous phase, and to read during a restore.

Backends never build storage paths (``storage_layout`` does); they write a stream of a kind or
upload a local file, and get a handle back. Small streams travel inline in the metadata.

**Threading:** a ``CheckpointStreams`` belongs to one asynchronous snapshot (one thread); a
``StorageRestoreStreams`` to the task thread during restore. **I/O:** checkpoint storage.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import FileHandle, InlineHandle, StreamHandle
from barrierflow.checkpoint.storage import CheckpointDirectory


class CheckpointAbortedError(Exception):
    """The coordinator aborted a checkpoint whose asynchronous phase was still running."""


class CheckpointStreams:
    """Where one operator subtask writes its part of one checkpoint or savepoint.

    ``storage`` is rooted where the snapshot's paths are relative to: the job's directory for
    a checkpoint, the savepoint's own directory for a savepoint (``savepoint``), whose files,
    the shared ones too, all go inside it. Every file is recorded before it is written, so that
    an aborted snapshot's files, even half-written ones, can be deleted by the task that wrote
    them (the coordinator does not know of them before the acknowledgement).
    """

    def __init__(
        self,
        storage: CheckpointDirectory | None,
        checkpoint_id: int,
        operator_uid: str,
        subtask: int,
        attempt: int,
        inline_threshold: int,
        is_aborted: Callable[[int], bool] = lambda checkpoint_id: False,
        savepoint: bool = False,
    ) -> None:
        self._storage = storage
        self._checkpoint_id = checkpoint_id
        self._files = layout.SnapshotFiles(checkpoint_id, savepoint)
        self._uid = operator_uid
        self._subtask = subtask
        self._attempt = attempt
        self._inline_threshold = inline_threshold
        self._is_aborted = is_aborted
        self._written: list[str] = []

    def write(self, data: bytes | memoryview, kind: str) -> StreamHandle:
        self._check_not_aborted()
        if len(data) <= self._inline_threshold or self._storage is None:
            return InlineHandle(bytes(data))
        path = self._files.exclusive(self._uid, self._subtask, self._attempt, kind)
        self._written.append(path)
        return self._storage.write_state_file(path, data)

    def upload_shared(self, local_path: str) -> FileHandle:
        self._check_not_aborted()
        if self._storage is None:
            raise RuntimeError(
                "incremental checkpoints need checkpoint storage; set a checkpoint directory"
            )
        path = self._files.shared(
            self._uid, self._subtask, os.path.basename(local_path), uuid.uuid4().hex[:12]
        )
        self._written.append(path)
        return self._storage.upload_file(path, local_path)

    def delete_written(self) -> None:
        if self._storage is not None:
            self._storage.delete_files(self._written)
        self._written.clear()

    def _check_not_aborted(self) -> None:
        if self._is_aborted(self._checkpoint_id):
            raise CheckpointAbortedError(f"checkpoint {self._checkpoint_id} was aborted")


class StorageRestoreStreams:
    """Reads the state of the checkpoint being restored, counting the bytes read from storage
    (a restore from local state reads none)."""

    def __init__(self, storage: CheckpointDirectory | None, shares_storage: bool) -> None:
        self._storage = storage
        self.shares_storage = shares_storage
        self.bytes_read = 0

    def read(self, handle: StreamHandle) -> bytes:
        if isinstance(handle, InlineHandle):
            return handle.data
        data = self._require_storage().read_state_file(handle)
        self.bytes_read += len(data)
        return data

    def read_range(self, handle: StreamHandle, offset: int, length: int) -> bytes:
        """Bytes of a stream without the rest (the caller checks them: the key-group
        format's section digests)."""
        if isinstance(handle, InlineHandle):
            return handle.data[offset : offset + length]
        data = self._require_storage().read_state_file_range(handle, offset, length)
        self.bytes_read += len(data)
        return data

    def download(self, handle: StreamHandle, local_path: str) -> None:
        if isinstance(handle, InlineHandle):
            with open(local_path, "wb") as out:
                out.write(handle.data)
            return
        self._require_storage().download_file(handle, local_path)
        self.bytes_read += handle.size

    def _require_storage(self) -> CheckpointDirectory:
        if self._storage is None:
            raise RuntimeError("the restored checkpoint has state files but no storage was given")
        return self._storage
