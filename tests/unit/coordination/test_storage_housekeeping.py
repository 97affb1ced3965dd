"""The coordinator's storage housekeeping: what retaining a checkpoint lets go is deleted in
order, the claimed snapshot once the store is full, orphans are swept, and a deletion that fails
is logged and fails nothing."""

from __future__ import annotations

import logging

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.checkpoint_completion import Retention
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.coordination.storage_housekeeping import ClaimedSnapshot, StorageHousekeeping
from barrierflow.coordination.storage_io import InlineStorageIo
from barrierflow.testing.coordinator_harness import DeferredStorageIo
from barrierflow.testing.in_memory_savepoint_storage import InMemorySavepointStorage


class RecordingStorage(InMemoryCheckpointStorage):
    """Checkpoint storage that records its deletions, and a claimed snapshot's, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []
        self.fail_deletes_with: OSError | None = None

    def delete_files(self, rel_paths: list[str]) -> None:
        if self.fail_deletes_with is not None:
            raise self.fail_deletes_with
        self.deleted.extend(rel_paths)
        super().delete_files(rel_paths)

    def discard_checkpoint_dir(self, checkpoint_id: int) -> None:
        self.deleted.append(layout.checkpoint_dir(checkpoint_id))
        super().discard_checkpoint_dir(checkpoint_id)


class RecordingSavepoints(InMemorySavepointStorage):
    def __init__(self, deleted: list[str]) -> None:
        super().__init__()
        self._deleted = deleted

    def dispose(self, root: str, metadata: CheckpointMetadata) -> None:
        self._deleted.append(root)
        super().dispose(root, metadata)


def housekeeping(num_retained: int = 2, io=None, claimed: bool = True):
    """A housekeeping, its checkpoint storage, and its savepoint storage."""
    storage = RecordingStorage()
    savepoints = RecordingSavepoints(storage.deleted)
    snapshot = ClaimedSnapshot("/claimed", CheckpointMetadata("old", "job", 41, 1, 2, []))
    keeper = StorageHousekeeping(
        storage, savepoints, io or InlineStorageIo(), snapshot if claimed else None, num_retained
    )
    return keeper, storage, savepoints


def test_what_retaining_let_go_is_deleted_in_order_and_the_claimed_snapshot_last():
    keeper, storage, _ = housekeeping(num_retained=2)
    keeper.let_go(Retention(["shared/held"], [3, 4], ["shared/old"], num_retained=2))
    assert storage.deleted == ["shared/held", "chk-3", "chk-4", "shared/old", "/claimed"]


def test_the_claimed_snapshot_goes_once_the_store_is_full_and_only_once():
    keeper, storage, _ = housekeeping(num_retained=2)
    keeper.let_go(Retention([], [], [], num_retained=1))
    assert storage.deleted == []  # it still counts as one of the two retained
    keeper.let_go(Retention([], [], [], num_retained=2))
    keeper.let_go(Retention([], [5], [], num_retained=2))
    assert storage.deleted == ["/claimed", "chk-5"]


def test_deletions_wait_for_the_storage_io_and_keep_their_order():
    io = DeferredStorageIo()
    keeper, storage, _ = housekeeping(io=io, claimed=False)
    keeper.discard_checkpoint(1)
    keeper.delete_shared(["shared/x"])
    keeper.delete_shared([])  # nothing to do: nothing queued
    assert storage.deleted == [] and len(io.queued) == 2
    io.run_all()
    assert storage.deleted == ["chk-1", "shared/x"]


def test_a_failed_deletion_is_logged_and_fails_nothing(caplog):
    keeper, storage, _ = housekeeping(claimed=False)
    storage.fail_deletes_with = OSError("access denied")
    with caplog.at_level(logging.WARNING, logger="barrierflow.checkpoint"):
        keeper.delete_shared(["shared/a", "shared/b"])
        keeper.sweep_orphans(retained=set(), known=frozenset())
    messages = [r.getMessage() for r in caplog.records]
    assert "Could not delete 2 shared file(s), e.g. shared/a: access denied" in messages
    assert "Could not sweep files of failed checkpoints: access denied" in messages


def test_the_sweep_deletes_unknown_shared_files_and_directories_of_checkpoints_not_retained():
    keeper, storage, _ = housekeeping(claimed=False)
    for path in ("shared/known", "shared/orphan", "chk-1/state", "chk-2/_metadata", "chk-3/x"):
        storage.add_file(path)
    keeper.sweep_orphans(retained={2}, known=frozenset({"shared/known"}))
    assert sorted(storage.files) == ["chk-2/_metadata", "shared/known"]


def test_a_failed_savepoints_directory_is_deleted():
    keeper, _, savepoints = housekeeping(claimed=False)
    location = savepoints.create("/target", "job")
    keeper.discard_savepoint(location)
    assert savepoints.locations == set()
