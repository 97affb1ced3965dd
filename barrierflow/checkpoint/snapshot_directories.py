"""What a directory given to the checkpoint commands holds: one snapshot (a ``chk-N`` or a
savepoint directory), one job's directory, or a directory of jobs and savepoints, such as a
checkpoint directory or a savepoint target directory (``state.savepoints.dir``).

``checkpoints list`` and ``checkpoints fsck`` take any of them; both find their work here.

**I/O:** lists directories through ``pyarrow.fs`` (local disk, S3...); reads no file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pyarrow.fs as pafs

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import HISTORY_FILE
from barrierflow.checkpoint.storage import resolve_filesystem


class Holds(enum.Enum):
    JOB = "job"  # a job's directory: its checkpoints' chk-N directories, its history
    SNAPSHOT = "snapshot"  # one checkpoint's or savepoint's own directory, with its _metadata


@dataclass(frozen=True)
class FoundDirectory:
    holds: Holds
    uri: str  # as the user would name it: the given URI, or it joined with the name
    path: str  # the file system's path
    mtime_ms: int


@dataclass(frozen=True)
class Found:
    fs: pafs.FileSystem
    directories: list[FoundDirectory]  # in name order

    def jobs(self) -> list[FoundDirectory]:
        return [d for d in self.directories if d.holds is Holds.JOB]

    def snapshots(self) -> list[FoundDirectory]:
        return [d for d in self.directories if d.holds is Holds.SNAPSHOT]


def find_snapshot_directories(uri: str) -> Found:
    """What ``uri`` holds: itself when it is a snapshot's or a job's directory, else each of
    its subdirectories that is one (a directory of savepoints holds snapshots; a checkpoint
    directory holds jobs; one may hold both). Raises ``FileNotFoundError`` when there is no
    ``uri``, ``StorageConfigError`` when its storage cannot be reached."""
    uri = uri.rstrip("/")
    if uri.endswith("/" + layout.METADATA_FILE):
        uri = uri[: -len(layout.METADATA_FILE) - 1]
    fs, path = resolve_filesystem(uri)
    infos = fs.get_file_info(pafs.FileSelector(path))  # FileNotFoundError if there is none
    itself = _holds(infos)
    if itself is not None:
        return Found(fs, [FoundDirectory(itself, uri, path, _newest(infos))])
    found = []
    for info in sorted(infos, key=lambda i: i.base_name):
        if info.type != pafs.FileType.Directory:
            continue
        inside = fs.get_file_info(pafs.FileSelector(info.path))
        holds = _holds(inside)
        if holds is not None:
            found.append(
                FoundDirectory(holds, f"{uri}/{info.base_name}", info.path, _newest(inside))
            )
    return Found(fs, found)


def _holds(infos: list[pafs.FileInfo]) -> Holds | None:
    """A snapshot's directory holds its ``_metadata``; a job's, its history or at least one
    ``chk-N`` directory."""
    names = {i.base_name for i in infos}
    if layout.METADATA_FILE in names:
        return Holds.SNAPSHOT
    if HISTORY_FILE in names or any(
        i.type == pafs.FileType.Directory and layout.parse_checkpoint_dir(i.base_name) is not None
        for i in infos
    ):
        return Holds.JOB
    return None


def _newest(infos: list[pafs.FileInfo]) -> int:
    times = [int(i.mtime.timestamp() * 1000) for i in infos if i.mtime is not None]
    return max(times, default=0)
