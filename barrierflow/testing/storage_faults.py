"""A fault-injecting file system for checkpoint storage: a test facility, never configured by
a user setting.

A test (the chaos campaign, ``bench/chaos.py``) makes a control directory and arms one fault
at a time in it (``StorageFaults.arm``): a write or a rename that fails with EIO or ENOSPC,
or a write that stalls. The job program calls ``install(control_dir)`` before ``execute()``:
``checkpoint/file_systems.py`` then wraps every file system that the driver and the
executors resolve (the wrapper rides to them in the job's file system settings). The first
matching operation in any of the job's processes claims the armed fault (an atomic rename of
the plan file, so it fires once across processes) and records what it hit in ``fired.json``.

The control directory must be on a disk every process of the job sees: a local directory with
``local[N]`` Spark, a shared mount on a cluster.

**Threading:** any thread; claims are atomic across threads and processes. **I/O:** the
wrapped file system's, plus one ``stat`` of the plan file per operation.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from barrierflow.checkpoint import file_systems

_PLAN = "armed.json"
_FIRED = "fired.json"


class StorageOperation(enum.Enum):
    WRITE = "write"  # a file written (opened for output, data written, closed)
    RENAME = "rename"  # a file moved to its final name (local and HDFS storage publish so)


class StorageFault(enum.Enum):
    EIO = "EIO"  # the operation fails with an I/O error, after half of its data where it writes
    ENOSPC = "ENOSPC"  # the device is full, after half of the data
    STALL = "stall"  # the operation waits ``stall_s`` first, then succeeds


@dataclass(frozen=True)
class ArmedFault:
    """One fault, for the first ``operation`` on a path that contains ``path_contains``."""

    operation: StorageOperation
    fault: StorageFault
    path_contains: str
    stall_s: float = 0.0

    def to_json(self) -> str:
        return json.dumps(
            {**asdict(self), "operation": self.operation.value, "fault": self.fault.value}
        )

    @staticmethod
    def from_json(text: str) -> ArmedFault:
        data = json.loads(text)
        return ArmedFault(
            StorageOperation(data["operation"]),
            StorageFault(data["fault"]),
            data["path_contains"],
            float(data.get("stall_s", 0.0)),
        )


@dataclass(frozen=True)
class FiredFault:
    """What an armed fault hit: when (epoch seconds), where and in which process."""

    fault: ArmedFault
    path: str
    at: float
    pid: int


@dataclass(frozen=True)
class StorageFaults:
    """The control directory of one job's storage faults; the ``FileSystemWrapper`` installed
    in its processes (frozen and small: it pickles into the executors' settings)."""

    control_dir: str

    # --- the test's side ---------------------------------------------------------------------

    def arm(self, fault: ArmedFault) -> None:
        """Arms ``fault`` (replacing one not yet fired): the next matching operation fires it."""
        os.makedirs(self.control_dir, exist_ok=True)
        tmp = os.path.join(self.control_dir, f".{_PLAN}.{uuid.uuid4().hex}")
        with open(tmp, "w") as f:
            f.write(fault.to_json())
        os.replace(tmp, os.path.join(self.control_dir, _PLAN))

    def disarm(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.control_dir, _PLAN))

    def fired(self) -> list[FiredFault]:
        """The faults fired so far, oldest first."""
        try:
            with open(os.path.join(self.control_dir, _FIRED)) as f:
                lines = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []
        return [
            FiredFault(ArmedFault.from_json(json.dumps(d["fault"])), d["path"], d["at"], d["pid"])
            for d in lines
        ]

    # --- the job's side ----------------------------------------------------------------------

    def wrap(self, fs: pafs.FileSystem) -> pafs.FileSystem:
        return pafs.PyFileSystem(FaultInjectingHandler(fs, self))

    def claim(self, operation: StorageOperation, path: str) -> ArmedFault | None:
        """The armed fault, if it matches this operation; claimed, so that no other operation
        of any process fires it."""
        plan = os.path.join(self.control_dir, _PLAN)
        try:
            with open(plan) as f:
                fault = ArmedFault.from_json(f.read())
        except (FileNotFoundError, ValueError):  # none armed, or being replaced
            return None
        if fault.operation is not operation or fault.path_contains not in path:
            return None
        try:  # only one claimer's rename succeeds
            os.rename(plan, f"{plan}.claimed.{os.getpid()}.{uuid.uuid4().hex}")
        except FileNotFoundError:
            return None
        fired = {"fault": json.loads(fault.to_json()), "path": path, "at": time.time()}
        with open(os.path.join(self.control_dir, _FIRED), "a") as f:
            f.write(json.dumps({**fired, "pid": os.getpid()}) + "\n")
        return fault


def install(control_dir: str) -> StorageFaults:
    """In a job program, before ``execute()``: its storage goes through ``control_dir``'s
    faults, on the driver and on the executors."""
    faults = StorageFaults(os.path.abspath(control_dir))
    os.makedirs(faults.control_dir, exist_ok=True)
    file_systems.install_wrapper(faults)
    return faults


def _error(fault: ArmedFault, path: str) -> OSError:
    code = errno.ENOSPC if fault.fault is StorageFault.ENOSPC else errno.EIO
    return OSError(code, f"{os.strerror(code)} (injected by the storage fault test facility)", path)


class _FailingStream:
    """An output stream that writes half of the first write, then fails as a full or broken
    device does; what it wrote stays, as a real failure would leave it."""

    def __init__(self, inner: pa.NativeFile, fault: ArmedFault, path: str) -> None:
        self._inner = inner
        self._fault = fault
        self._path = path
        self.closed = False

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self._inner.write(view[: len(view) // 2])
        raise _error(self._fault, self._path)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()


class FaultInjectingHandler(pafs.FileSystemHandler):
    """Delegates everything to ``inner``; an armed write or rename fails or stalls."""

    def __init__(self, inner: pafs.FileSystem, faults: StorageFaults) -> None:
        self.inner = inner
        self._faults = faults

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FaultInjectingHandler) and other.inner.equals(self.inner)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return self.inner.type_name  # so that is_object_store sees what is underneath

    def normalize_path(self, path: str) -> str:
        return self.inner.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.inner.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        self.inner.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        self.inner.delete_file(path)

    def copy_file(self, src: str, dest: str) -> None:
        self.inner.copy_file(src, dest)

    def move(self, src: str, dest: str) -> None:
        fault = self._faults.claim(StorageOperation.RENAME, dest)
        if fault is not None:
            if fault.fault is not StorageFault.STALL:
                raise _error(fault, dest)
            time.sleep(fault.stall_s)
        self.inner.move(src, dest)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: dict | None = None) -> pa.NativeFile:
        fault = self._faults.claim(StorageOperation.WRITE, path)
        if fault is not None and fault.fault is StorageFault.STALL:
            time.sleep(fault.stall_s)
            fault = None
        stream = self.inner.open_output_stream(path, metadata=metadata)
        if fault is None:
            return stream
        return pa.PythonFile(_FailingStream(stream, fault, path), mode="w")

    def open_append_stream(self, path: str, metadata: dict | None = None) -> pa.NativeFile:
        return self.inner.open_append_stream(path, metadata=metadata)
