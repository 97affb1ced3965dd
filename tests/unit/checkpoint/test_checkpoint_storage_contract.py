"""One contract for checkpoint storage, run over a local directory and over S3 (a real
S3-protocol server, tests/servers/s3.py): what the coordinator and the tasks rely on must hold
on both, although an object store has no rename and no directories (ADR 0009)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata, FileHandle
from barrierflow.checkpoint.storage import CheckpointDirectory, FileSystemSavepointStorage
from barrierflow.errors import CorruptCheckpointError


class Local:
    def __init__(self, tmp_path, s3) -> None:
        self.root = str(tmp_path / "job")
        self.storage = CheckpointDirectory(self.root)

    def files(self) -> list[str]:
        """Every file under the job root, relative to it."""
        return sorted(
            os.path.relpath(os.path.join(d, n), self.root)
            for d, _, names in os.walk(self.root)
            for n in names
        )

    def replace(self, rel_path: str, data: bytes) -> None:
        with open(os.path.join(self.root, rel_path), "wb") as f:
            f.write(data)


class S3:
    def __init__(self, tmp_path, s3) -> None:
        self.server = s3
        self.bucket = s3.bucket()
        self.root = f"s3://{self.bucket}/checkpoints/job"
        file_systems.initialize(file_systems.settings_from(Configuration(s3.configuration())))
        self.storage = CheckpointDirectory(self.root)

    def files(self) -> list[str]:
        prefix = "checkpoints/job/"
        return [k.removeprefix(prefix) for k in self.server.keys(self.bucket, prefix)]

    def replace(self, rel_path: str, data: bytes) -> None:
        self.server.put(self.bucket, f"checkpoints/job/{rel_path}", data)


@pytest.fixture(params=[Local, S3], ids=["local", "s3"])
def s(request, tmp_path):
    s3 = request.getfixturevalue("s3") if request.param is S3 else None
    yield request.param(tmp_path, s3)
    file_systems.initialize(file_systems.FileSystemSettings())


def metadata(cid: int) -> CheckpointMetadata:
    return CheckpointMetadata("job", "name", cid, cid, cid + 1, [])


def test_metadata_reads_back_marks_the_checkpoint_completed_and_leaves_no_temporary_file(s):
    assert s.storage.list_completed() == []
    s.storage.write_metadata(metadata(3))
    s.storage.write_metadata(metadata(12))
    assert s.storage.read_metadata(12) == metadata(12)
    assert s.storage.list_completed() == [3, 12]
    assert s.files() == sorted([layout.metadata_path(3), layout.metadata_path(12)])


def test_a_half_written_metadata_file_is_detected_as_corrupt(s):
    s.storage.write_metadata(metadata(1))
    whole = s.storage.read_small_file(layout.metadata_path(1))
    s.replace(layout.metadata_path(1), whole[: len(whole) // 2])
    with pytest.raises(CorruptCheckpointError, match="unusable"):
        s.storage.read_metadata(1)
    with pytest.raises(CorruptCheckpointError, match="no such file"):
        s.storage.read_metadata(2)


def test_checkpoint_directories_are_listed_completed_or_not_and_discarded_whole(s):
    s.storage.write_state_file(f"{layout.checkpoint_dir(2)}/op-1.keyed", b"x")
    s.storage.write_metadata(metadata(5))
    s.storage.write_state_file(f"{layout.checkpoint_dir(5)}/op-1.keyed", b"y")
    assert s.storage.list_checkpoint_dirs() == [2, 5]
    assert s.storage.list_completed() == [5]
    s.storage.discard_checkpoint_dir(5)
    s.storage.discard_checkpoint_dir(99)  # absent: no error
    assert s.storage.list_checkpoint_dirs() == [2]
    assert s.storage.list_completed() == []
    assert s.files() == [f"{layout.checkpoint_dir(2)}/op-1.keyed"]


def test_shared_files_are_listed_and_deleted_by_relative_path_until_none_is_left(s, tmp_path):
    a = layout.shared_state_file(1, "op", 0, "000001.sst", "u1")
    b = layout.shared_state_file(2, "op", 1, "000002.sst", "u2")
    local = tmp_path / "000001.sst"
    local.write_bytes(b"sst" * 1000)
    handle = s.storage.upload_file(a, str(local))
    s.storage.write_state_file(b, b"y")
    s.storage.write_state_file(f"{layout.checkpoint_dir(1)}/private", b"z")
    assert s.storage.list_shared() == sorted([a, b])
    s.storage.download_file(handle, str(tmp_path / "back.sst"))
    assert (tmp_path / "back.sst").read_bytes() == b"sst" * 1000
    s.storage.delete_files([a, "shared/never-written.sst"])
    assert s.storage.list_shared() == [b]
    s.storage.delete_files([b])
    assert s.storage.list_shared() == []
    assert s.files() == [f"{layout.checkpoint_dir(1)}/private"]


def test_a_missing_or_altered_state_file_is_reported_naming_its_path(s):
    handle = s.storage.write_state_file("chk-1/op.keyed", b"state")
    assert s.storage.read_state_file(handle) == b"state"
    s.replace("chk-1/op.keyed", b"stat!")
    with pytest.raises(CorruptCheckpointError, match="checksum mismatch"):
        s.storage.read_state_file(handle)
    with pytest.raises(CorruptCheckpointError, match="missing"):
        s.storage.read_state_file(FileHandle("chk-1/gone", 1, handle.checksum))


def test_a_range_of_a_state_file_is_read_alone_and_a_changed_size_is_reported(s):
    handle = s.storage.write_state_file("chk-1/op.keyed", b"0123456789")
    assert s.storage.read_state_file_range(handle, 3, 4) == b"3456"
    with pytest.raises(CorruptCheckpointError, match="beyond its 10 bytes"):
        s.storage.read_state_file_range(handle, 8, 4)
    s.replace("chk-1/op.keyed", b"01234")
    with pytest.raises(CorruptCheckpointError, match="size 5 != recorded 10"):
        s.storage.read_state_file_range(handle, 0, 2)
    with pytest.raises(CorruptCheckpointError, match="missing"):
        s.storage.read_state_file_range(FileHandle("chk-1/gone", 1, handle.checksum), 0, 1)


def test_small_files_and_the_history_are_replaced_whole_and_deleted(s):
    assert s.storage.read_history() is None
    record = CheckpointRecord(1, CheckpointStatus.FAILED, 1, 2, 1.0, 0, 0, 1, 0, "declined")
    s.storage.write_history(CheckpointHistory("job", "name", [record]))
    s.storage.write_history(CheckpointHistory("job", "name", [record, record]))
    assert s.storage.read_history() == CheckpointHistory("job", "name", [record, record])
    s.storage.write_small_file(layout.JOBMASTER_ADDRESS_FILE, b"one")
    s.storage.write_small_file(layout.JOBMASTER_ADDRESS_FILE, b"two")
    assert s.storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE) == b"two"
    s.storage.delete_small_file(layout.JOBMASTER_ADDRESS_FILE)
    s.storage.delete_small_file(layout.JOBMASTER_ADDRESS_FILE)  # absent: no error
    assert s.storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE) is None
    assert s.files() == ["_history.json"]


def test_a_savepoint_directory_is_created_written_and_discarded(s):
    savepoints = FileSystemSavepointStorage()
    location = savepoints.create(s.root.rsplit("/", 1)[0] + "/savepoints", "job")
    savepoints.write_metadata(location, metadata(7))
    assert CheckpointDirectory(location).read_small_file(layout.METADATA_FILE) is not None
    savepoints.discard(location)
    assert CheckpointDirectory(location).read_small_file(layout.METADATA_FILE) is None


_KILLED_WRITER = """
import os, sys, time
from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.file_systems import FileSystemSettings, S3Settings
file_systems.initialize(FileSystemSettings(S3Settings(*sys.argv[1:4], True, "us-east-1")))
fs, path = file_systems.resolve(sys.argv[4])
out = fs.open_output_stream(path)
out.write(os.urandom(12 << 20))  # more than one part: parts are uploaded now
out.write(b"...")
print("written", flush=True)
time.sleep(60)
"""


def test_on_s3_a_writer_killed_mid_upload_leaves_no_object(s3):
    """What the metadata relies on: an object appears only when its upload completes."""
    bucket = s3.bucket()
    target = f"s3://{bucket}/job/chk-1/_metadata"
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED_WRITER),
         s3.endpoint, s3.access_key, s3.secret_key, target],
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert writer.stdout.readline() == b"written\n"
    finally:
        os.killpg(writer.pid, signal.SIGKILL)
        writer.wait(10)
    assert s3.keys(bucket) == []
    file_systems.initialize(file_systems.settings_from(Configuration(s3.configuration())))
    try:
        assert CheckpointDirectory(f"s3://{bucket}/job").list_completed() == []
    finally:
        file_systems.initialize(file_systems.FileSystemSettings())
