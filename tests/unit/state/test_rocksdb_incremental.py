"""Incremental snapshots of the rocksdb backend, against real checkpoint storage in a temporary
directory: what is uploaded and what is reused, restore by opening the files, local recovery.
The semantics every backend shares are in test_state_backend_contract.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from barrierflow.checkpoint.metadata import IncrementalKeyedHandle, KeyGroupsHandle
from barrierflow.checkpoint.state_streams import CheckpointStreams, StorageRestoreStreams
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import CorruptCheckpointError
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend

MAX_PARALLELISM = 128
FULL = KeyGroupRange(0, MAX_PARALLELISM - 1)
MiB = 1 << 20
COUNT = ValueStateDescriptor("count")


class Subtask:
    """One operator subtask's backend and the checkpoints it takes, as the task drives them."""

    def __init__(
        self,
        root: Path,
        attempt: int = 1,
        local_recovery: bool = False,
        write_buffer_bytes: int = MiB,
    ) -> None:
        self.root = root
        self.storage = CheckpointDirectory(str(root / "checkpoints"))
        self.backend = RocksDBKeyedStateBackend(
            MAX_PARALLELISM,
            FULL,
            str(root / f"local-a{attempt}"),
            MiB,
            write_buffer_bytes,
            incremental=True,
            local_recovery_dir=str(root / "local-recovery") if local_recovery else None,
        )

    @property
    def count(self):
        """Declared on first use, as an operator does after its restore."""
        return self.backend.get_state(COUNT)

    def put(self, keys, value) -> None:
        for key in keys:
            self.backend.key_context.key = key
            self.count.update(value)

    def get(self, key):
        self.backend.key_context.key = key
        return self.count.value()

    def checkpoint(self, cid: int, complete: bool = True) -> IncrementalKeyedHandle:
        snapshot = self.backend.snapshot(cid)
        streams = CheckpointStreams(self.storage, cid, "counter", 0, 1, inline_threshold=1024)
        (handle,) = snapshot(streams)
        if complete:
            self.backend.notify_checkpoint_complete(cid)
        return handle

    def restore(self, handle: IncrementalKeyedHandle) -> StorageRestoreStreams:
        streams = StorageRestoreStreams(self.storage, shares_storage=True)
        self.backend.restore([handle], streams)
        return streams


def new_bytes(handle: IncrementalKeyedHandle) -> int:
    return handle.checkpointed_size(handle.checkpoint_id)


@pytest.fixture
def subtask(tmp_path: Path):
    s = Subtask(tmp_path)
    yield s
    s.backend.dispose()


def test_a_checkpoint_after_changing_one_percent_of_keys_uploads_a_small_fraction(tmp_path):
    # A write buffer that holds all the puts: each checkpoint flushes one file, too few for
    # RocksDB to start a compaction in the background, which would rewrite checkpoint 1's files
    # at a moment of its choosing and make checkpoint 2 upload them again.
    subtask = Subtask(tmp_path, write_buffer_bytes=16 * MiB)
    keys = range(50_000)
    subtask.put(keys, "x" * 40)
    first = subtask.checkpoint(1)
    assert new_bytes(first) == first.state_size() > 200_000
    subtask.put(range(0, 50_000, 100), "changed")
    second = subtask.checkpoint(2)
    assert new_bytes(second) < 0.05 * second.state_size()
    reused = {s.local_name for s in second.shared if s.checkpoint_id == 1}
    assert reused == {s.local_name for s in first.shared}
    assert all(s.file.path.startswith("shared/") for s in second.shared)
    assert set(second.private) >= {"CURRENT"} and any(
        n.startswith("MANIFEST") for n in second.private
    )
    subtask.backend.dispose()


def test_only_files_of_a_checkpoint_notified_complete_are_reused(subtask):
    subtask.put(range(1000), 1)
    pending = subtask.checkpoint(1, complete=False)
    subtask.put(range(10), 2)
    second = subtask.checkpoint(2, complete=False)
    # Checkpoint 1 may still be aborted: its uploads are not referenced, they are uploaded again.
    assert all(s.checkpoint_id == 2 for s in second.shared)
    subtask.backend.notify_checkpoint_aborted(2)
    subtask.backend.notify_checkpoint_complete(1)
    subtask.put(range(10), 3)
    third = subtask.checkpoint(3)
    assert {s.file.path for s in third.shared if s.checkpoint_id != 3} == {
        s.file.path for s in pending.shared
    }
    assert not {s.file.path for s in third.shared} & {
        s.file.path for s in second.shared if s.checkpoint_id == 2
    }


def test_restore_opens_the_files_and_the_next_checkpoint_reuses_them(tmp_path):
    first = Subtask(tmp_path)
    first.put(range(5000), "v")
    first.put(range(0, 5000, 7), "w")
    handle = first.checkpoint(1)
    first.backend.dispose()

    second = Subtask(tmp_path, attempt=2)
    streams = second.restore(handle)
    assert streams.bytes_read == handle.state_size() - sum(
        len(h.data) for h in handle.private.values() if hasattr(h, "data")
    )
    assert [second.get(k) for k in range(14)] == ["w" if k % 7 == 0 else "v" for k in range(14)]
    second.put([1], "after restore")
    after = second.checkpoint(2)
    assert {s.file.path for s in after.shared if s.checkpoint_id == 1} == {
        s.file.path for s in handle.shared
    }
    second.backend.dispose()


def test_a_corrupted_shared_file_is_reported_with_its_path(tmp_path):
    first = Subtask(tmp_path)
    first.put(range(100), 1)
    handle = first.checkpoint(1)
    first.backend.dispose()
    victim = handle.shared[0].file
    path = first.storage.absolute(victim.path)
    data = bytearray(Path(path).read_bytes())
    data[len(data) // 2] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    second = Subtask(tmp_path, attempt=2)
    with pytest.raises(CorruptCheckpointError, match="checksum mismatch") as error:
        second.restore(handle)
    assert error.value.path == path
    second.backend.dispose()


def test_local_recovery_reads_nothing_from_storage_and_keeps_only_the_last_completed(tmp_path):
    first = Subtask(tmp_path, local_recovery=True)
    first.put(range(3000), "a")
    first.checkpoint(1)
    first.put(range(100), "b")
    first.checkpoint(2, complete=False)
    first.backend.notify_checkpoint_aborted(2)
    first.put(range(50), "c")
    handle = first.checkpoint(3)
    assert sorted(os.listdir(tmp_path / "local-recovery")) == ["chk-3"]
    first.backend.dispose()  # as a failed attempt: the local copy stays

    second = Subtask(tmp_path, attempt=2, local_recovery=True)
    streams = second.restore(handle)
    assert streams.bytes_read == 0
    assert [second.get(k) for k in (0, 60, 200)] == ["c", "b", "a"]
    second.backend.dispose()


def test_a_local_copy_that_does_not_match_is_not_used(tmp_path):
    first = Subtask(tmp_path, local_recovery=True)
    first.put(range(3000), "a")
    handle = first.checkpoint(1)
    first.backend.dispose()
    sst = tmp_path / "local-recovery" / "chk-1" / handle.shared[0].local_name
    sst.unlink()
    sst.write_bytes(b"not the file that was uploaded")

    second = Subtask(tmp_path, attempt=2, local_recovery=True)
    streams = second.restore(handle)
    assert streams.bytes_read >= handle.shared[0].file.size
    assert second.get(2999) == "a"
    second.backend.dispose()


def test_restore_into_another_key_group_range_copies_only_its_rows(tmp_path):
    first = Subtask(tmp_path)
    first.put(range(2000), "v")
    handle = first.checkpoint(1)
    first.backend.dispose()
    low = KeyGroupRange(0, 63)
    backend = RocksDBKeyedStateBackend(MAX_PARALLELISM, low, str(tmp_path / "low"), MiB, MiB, True)
    backend.restore([handle], StorageRestoreStreams(first.storage, shares_storage=True))
    count = backend.get_state(COUNT)
    kept = 0
    for key in range(2000):
        backend.key_context.key = key
        owned = backend._key_groups.key_group(key) in low
        assert count.value() == ("v" if owned else None)
        kept += owned
    assert 0 < kept < 2000
    backend.dispose()


def test_a_local_copy_that_does_not_open_is_deleted_and_the_files_downloaded(tmp_path):
    first = Subtask(tmp_path, local_recovery=True)
    first.put(range(3000), "a")
    handle = first.checkpoint(1)
    first.backend.dispose()
    current = tmp_path / "local-recovery" / "chk-1" / "CURRENT"
    current.write_bytes(b"X" * current.stat().st_size)  # same size, names no MANIFEST

    second = Subtask(tmp_path, attempt=2, local_recovery=True)
    streams = second.restore(handle)
    assert streams.bytes_read > 0
    assert not (tmp_path / "local-recovery" / "chk-1").exists()
    assert second.get(2999) == "a"
    second.backend.dispose()


def test_a_canonical_snapshot_is_in_the_key_group_format_and_restores_into_the_heap(subtask):
    from barrierflow.protocol.checkpoint_barrier import (
        CheckpointKind,
        CheckpointOptions,
        SnapshotFormat,
    )
    from barrierflow.state.backends.hashmap import HeapKeyedStateBackend

    subtask.put(range(100), 7)
    subtask.checkpoint(1)
    shared_before = subtask.storage.list_shared()
    savepoint = CheckpointOptions(
        CheckpointKind.SAVEPOINT, SnapshotFormat.CANONICAL, target_location="/sp"
    )
    snapshot = subtask.backend.snapshot(2, savepoint)
    streams = CheckpointStreams(subtask.storage, 2, "counter", 0, 1, inline_threshold=1024)
    (handle,) = snapshot(streams)
    assert isinstance(handle, KeyGroupsHandle)
    assert subtask.storage.list_shared() == shared_before  # self-contained: no shared file
    heap = HeapKeyedStateBackend(MAX_PARALLELISM, FULL)
    heap.restore([handle], StorageRestoreStreams(subtask.storage, shares_storage=False))
    heap.key_context.key = 42
    assert heap.get_state(COUNT).value() == 7


def test_a_rescale_up_opens_the_old_database_and_clips_it_copying_no_row(tmp_path, monkeypatch):
    """Each new subtask of a rescale up opens its old subtask's files as its database and
    deletes the key groups outside its range by range: no row goes through Python."""
    from barrierflow.state.key_groups import assign_to_key_group

    old = Subtask(tmp_path)
    old.put(range(2000), "v")
    handle = old.checkpoint(1)
    low = KeyGroupRange(0, MAX_PARALLELISM // 2 - 1)
    copied = []
    monkeypatch.setattr(RocksDBKeyedStateBackend, "_copy_rows", lambda *a: copied.append(a))
    new = RocksDBKeyedStateBackend(
        MAX_PARALLELISM, low, str(tmp_path / "new"), MiB, MiB, incremental=True
    )
    new.restore([handle], StorageRestoreStreams(old.storage, shares_storage=True))
    assert copied == []
    mine = [k for k in range(2000) if assign_to_key_group(k, MAX_PARALLELISM) in low]
    state = new.get_state(COUNT)
    for key in range(2000):
        new.key_context.key = key
        assert state.value() == ("v" if key in mine else None)
    raw = new._tables["count"].db
    assert len(list(raw.keys())) == len(mine)  # the others deleted, not only hidden
    new.dispose()
