"""One contract for what the coordinator needs of checkpoint storage, run over every
implementation: the file-system one (a real temporary directory) and the in-memory one the
coordinator's unit tests use. If they disagree, those unit tests prove nothing."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.errors import CorruptCheckpointError


class FileSystem:
    def __init__(self, tmp_path) -> None:
        self.storage = CheckpointDirectory(str(tmp_path))

    def add_file(self, path: str, data: bytes = b"x") -> None:
        self.storage.write_state_file(path, data)

    def corrupt_metadata(self, checkpoint_id: int) -> None:
        path = self.storage.absolute(layout.metadata_path(checkpoint_id))
        with open(path, "r+b") as f:  # the last byte flipped: whatever it was, it changes
            f.seek(-1, 2)
            last = f.read(1)[0]
            f.seek(-1, 2)
            f.write(bytes([last ^ 0xFF]))


class InMemory:
    def __init__(self, tmp_path) -> None:
        self.storage = InMemoryCheckpointStorage()

    def add_file(self, path: str, data: bytes = b"x") -> None:
        self.storage.add_file(path, data)

    def corrupt_metadata(self, checkpoint_id: int) -> None:
        path = layout.metadata_path(checkpoint_id)
        data = self.storage.files[path]
        self.storage.files[path] = data[:-1] + bytes([data[-1] ^ 0xFF])


@pytest.fixture(params=[FileSystem, InMemory], ids=["file system", "in memory"])
def s(request, tmp_path):
    return request.param(tmp_path)


def metadata(cid: int) -> CheckpointMetadata:
    return CheckpointMetadata("job", "name", cid, cid, cid + 1, [])


def test_metadata_reads_back_and_marks_the_checkpoint_completed(s):
    assert s.storage.list_completed() == []
    s.storage.write_metadata(metadata(3))
    s.storage.write_metadata(metadata(12))
    assert s.storage.read_metadata(12) == metadata(12)
    assert s.storage.list_completed() == [3, 12]


def test_missing_or_corrupt_metadata_is_reported_as_corrupt(s):
    with pytest.raises(CorruptCheckpointError):
        s.storage.read_metadata(1)
    s.storage.write_metadata(metadata(1))
    s.corrupt_metadata(1)
    with pytest.raises(CorruptCheckpointError, match="checksum mismatch"):
        s.storage.read_metadata(1)


def test_checkpoint_directories_are_listed_completed_or_not_and_discarded_whole(s):
    s.add_file(f"{layout.checkpoint_dir(2)}/op-1.keyed")
    s.storage.write_metadata(metadata(5))
    s.add_file(f"{layout.checkpoint_dir(5)}/op-1.keyed")
    assert s.storage.list_checkpoint_dirs() == [2, 5]
    assert s.storage.list_completed() == [5]
    s.storage.discard_checkpoint_dir(5)
    s.storage.discard_checkpoint_dir(99)  # absent: no error
    assert s.storage.list_checkpoint_dirs() == [2]
    assert s.storage.list_completed() == []


def test_shared_files_are_listed_and_deleted_by_relative_path(s):
    a = layout.shared_state_file(1, "op", 0, "000001.sst", "u1")
    b = layout.shared_state_file(2, "op", 1, "000002.sst", "u2")
    s.add_file(a)
    s.add_file(b)
    s.add_file(f"{layout.checkpoint_dir(1)}/private")
    assert s.storage.list_shared() == sorted([a, b])
    s.storage.delete_files([a, "shared/never-written.sst"])
    assert s.storage.list_shared() == [b]


def test_the_history_reads_back_and_is_absent_at_first(s):
    assert s.storage.read_history() is None
    record = CheckpointRecord(1, CheckpointStatus.FAILED, 1, 2, 1.0, 0, 0, 1, 0, "declined")
    history = CheckpointHistory("job", "name", [record])
    s.storage.write_history(history)
    assert s.storage.read_history() == history
