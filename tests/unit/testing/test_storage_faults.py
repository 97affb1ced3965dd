"""The fault-injecting file system: an armed fault fires once, on the first matching operation
of checkpoint storage, and everything else passes through."""

from __future__ import annotations

import errno
import os

import pytest

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.testing import storage_faults
from barrierflow.testing.storage_faults import ArmedFault, StorageFault, StorageOperation


@pytest.fixture
def faults(tmp_path):
    installed = storage_faults.install(str(tmp_path / "control"))
    yield installed
    file_systems.install_wrapper(None)
    file_systems.initialize(file_systems.FileSystemSettings())


class _NoOptions:
    def get(self, key):
        return None


def test_an_armed_write_fails_once_with_its_error_and_leaves_half_a_file(tmp_path, faults):
    storage = CheckpointDirectory(str(tmp_path / "job"))
    faults.arm(ArmedFault(StorageOperation.WRITE, StorageFault.ENOSPC, "chk-3"))

    with pytest.raises(OSError) as raised:
        storage.write_state_file("chk-3/state", b"x" * 100)

    assert raised.value.errno == errno.ENOSPC
    assert os.path.getsize(tmp_path / "job" / "chk-3" / "state") == 50
    (fired,) = faults.fired()
    assert fired.path.endswith("chk-3/state") and fired.fault.fault is StorageFault.ENOSPC
    storage.write_state_file("chk-3/state", b"y" * 100)  # fired once: the next one writes
    assert (tmp_path / "job" / "chk-3" / "state").read_bytes() == b"y" * 100


def test_a_write_elsewhere_passes_and_leaves_the_fault_armed(tmp_path, faults):
    storage = CheckpointDirectory(str(tmp_path / "job"))
    faults.arm(ArmedFault(StorageOperation.WRITE, StorageFault.EIO, "chk-9"))

    storage.write_state_file("chk-1/state", b"abc")
    assert faults.fired() == []
    with pytest.raises(OSError) as raised:
        storage.write_state_file("chk-9/state", b"abc")
    assert raised.value.errno == errno.EIO


def test_an_armed_rename_keeps_the_completion_marker_from_appearing(tmp_path, faults):
    storage = CheckpointDirectory(str(tmp_path / "job"))
    faults.arm(ArmedFault(StorageOperation.RENAME, StorageFault.EIO, "_metadata"))

    with pytest.raises(OSError, match="injected"):
        storage.write_metadata(CheckpointMetadata("job", "name", 4, 0, 0, []))

    assert storage.list_completed() == []
    assert [f.fault.operation for f in faults.fired()] == [StorageOperation.RENAME]


def test_a_stalled_write_completes_and_is_recorded(tmp_path, faults):
    storage = CheckpointDirectory(str(tmp_path / "job"))
    faults.arm(ArmedFault(StorageOperation.WRITE, StorageFault.STALL, "chk-", stall_s=0.01))

    handle = storage.write_state_file("chk-2/state", b"abc")

    assert storage.read_state_file(handle) == b"abc"
    assert [f.fault.fault for f in faults.fired()] == [StorageFault.STALL]


def test_a_wrapped_local_file_system_still_renames_and_settings_carry_the_wrapper(faults):
    fs, _ = file_systems.resolve("/tmp")
    assert not file_systems.is_object_store(fs)
    assert file_systems.settings_from(_NoOptions()).wrapper == faults


def test_without_an_installed_wrapper_nothing_is_wrapped():
    assert file_systems.settings_from(_NoOptions()).wrapper is None
    fs, _ = file_systems.resolve("/tmp")
    assert fs.type_name == "local"
