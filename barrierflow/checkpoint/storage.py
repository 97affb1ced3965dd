"""Checkpoint storage: reads and writes the files of a job's checkpoints through pyarrow.fs.

What storage must provide: read-after-write of a closed file (listings included), and a way
to make the completion marker appear whole: an atomic rename (local file systems, HDFS), or an
object that becomes visible only when its upload completes (S3 and other object stores, which
have no atomic rename: ``_metadata``, the history and the JobMaster's address are written there
as one object, never renamed; docs/adr/0009-object-storage.md). Nothing else is assumed:
on object stores directories are prefixes, never created, and vanish with their last file.

**Threading:** safe to call from any thread; the task's asynchronous snapshot threads and the
coordinator use their own instances. **I/O:** all of it, through ``pyarrow.fs``.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid

import msgspec
import pyarrow.fs as pafs

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import (
    HISTORY_FILE,
    CheckpointHistory,
    decode_history,
    encode_history,
)
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    FileHandle,
    checksummer,
    content_checksum,
    decode_metadata,
    encode_metadata,
)
from barrierflow.errors import CorruptCheckpointError, StorageConfigError

_COPY_CHUNK = 1 << 20


def resolve_filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path of ``uri``: a local path or any URI pyarrow.fs understands,
    with this process's settings (``file_systems.initialize``) for object stores."""
    return file_systems.resolve(uri)


def job_root_uri(base_uri: str, job_id: str) -> str:
    return f"{base_uri.rstrip('/')}/{job_id}"


class CheckpointDirectory:
    """The files under one checkpoint root: a job's checkpoints under its job root
    ``<checkpoint-dir>/<job-id>`` (``chk-N/``, ``shared/``, its history and address files), or
    one savepoint's directory. (PyFlink's ``CheckpointStorage``, which chooses where a job
    checkpoints, is ``api/checkpoint_storage.py``'s.)"""

    def __init__(self, job_root_uri: str, write_buffer_size: int = 4096) -> None:
        self.job_root_uri = job_root_uri
        self._fs, self.job_root = resolve_filesystem(job_root_uri)
        self._object_store = file_systems.is_object_store(self._fs)
        self._write_buffer_size = write_buffer_size

    def absolute(self, rel_path: str) -> str:
        return posixpath.join(self.job_root, rel_path)

    def _make_dir(self, path: str) -> None:
        """Creates a directory where directories exist; on an object store a directory is a
        prefix that appears with its first file (pyarrow would write empty marker objects)."""
        if not self._object_store:
            self._fs.create_dir(path, recursive=True)

    def _publish(self, final: str, data: bytes) -> None:
        """Makes ``data`` appear at ``final`` whole or not at all (docs/adr/0009): a temporary
        file and an atomic rename; on an object store, one upload of the final object, which
        becomes visible when it completes (a writer killed before has published nothing)."""
        self._make_dir(posixpath.dirname(final))
        if self._object_store:
            write_whole_object(self._fs, final, data)
            return
        tmp = f"{final}.{uuid.uuid4().hex}.inprogress"
        with self._fs.open_output_stream(tmp) as out:
            out.write(data)
        self._fs.move(tmp, final)

    # --- state files (tasks, asynchronous phase) ----------------------------------------------

    def write_state_file(self, rel_path: str, data: bytes | memoryview) -> FileHandle:
        path = self.absolute(rel_path)
        self._make_dir(posixpath.dirname(path))
        with self._fs.open_output_stream(path, buffer_size=self._write_buffer_size) as out:
            out.write(data)
        return FileHandle(rel_path, len(data), content_checksum(data))

    def upload_file(self, rel_path: str, local_path: str) -> FileHandle:
        """Copies a local file to ``rel_path`` in chunks, summing it on the way."""
        path = self.absolute(rel_path)
        self._make_dir(posixpath.dirname(path))
        with open(local_path, "rb") as src, self._fs.open_output_stream(path) as out:
            size, checksum = _copy_summed(src, out)
        return FileHandle(rel_path, size, checksum)

    def download_file(self, handle: FileHandle, local_path: str) -> None:
        """Copies a state file to a local file; a missing, truncated or corrupted one is
        reported naming its path, and leaves no local file."""
        path = self.absolute(handle.path)
        try:
            with self._fs.open_input_stream(path) as src, open(local_path, "wb") as out:
                size, checksum = _copy_summed(src, out)
            if size != handle.size:
                raise CorruptCheckpointError(path, f"size {size} != recorded {handle.size}")
            if checksum != handle.checksum:
                raise CorruptCheckpointError(path, "checksum mismatch: the file was corrupted")
        except FileNotFoundError as e:
            with contextlib.suppress(FileNotFoundError):
                os.remove(local_path)
            raise CorruptCheckpointError(path, "state file is missing") from e
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.remove(local_path)
            raise

    def read_state_file(self, handle: FileHandle) -> bytes:
        path = self.absolute(handle.path)
        try:
            with self._fs.open_input_stream(path) as f:
                data = f.read()
        except FileNotFoundError as e:
            raise CorruptCheckpointError(path, "state file is missing") from e
        if len(data) != handle.size:
            raise CorruptCheckpointError(path, f"size {len(data)} != recorded {handle.size}")
        if content_checksum(data) != handle.checksum:
            raise CorruptCheckpointError(path, "checksum mismatch: the file was corrupted")
        return data

    def read_state_file_range(self, handle: FileHandle, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` of a state file, without reading the rest: the file's
        checksum cannot be checked, so the caller checks what it read (the key-group format's
        section digests). Its size is checked."""
        path = self.absolute(handle.path)
        try:
            with self._fs.open_input_file(path) as f:
                size = f.size()
                if size != handle.size:
                    raise CorruptCheckpointError(path, f"size {size} != recorded {handle.size}")
                if offset + length > size:
                    raise CorruptCheckpointError(
                        path, f"{length} bytes at {offset} are beyond its {size} bytes"
                    )
                return f.read_at(length, offset)
        except FileNotFoundError as e:
            raise CorruptCheckpointError(path, "state file is missing") from e

    # --- metadata (coordinator) ---------------------------------------------------------------

    def write_metadata(self, metadata: CheckpointMetadata, rel_path: str | None = None) -> str:
        """Writes ``chk-N/_metadata`` (or ``rel_path``) last, whole or not at all
        (``_publish``); it is checksummed, so a truncated one is also recognized on reading."""
        final = self.absolute(rel_path or layout.metadata_path(metadata.checkpoint_id))
        self._publish(final, encode_metadata(metadata))  # encoded first: nothing half-made
        return final

    def write_history(self, history: CheckpointHistory) -> None:
        """Replaces ``_history.json`` whole (``_publish``)."""
        self.write_small_file(HISTORY_FILE, encode_history(history))

    def write_small_file(self, name: str, data: bytes) -> None:
        """Replaces a file of the job root whole (``_publish``)."""
        self._publish(self.absolute(name), data)

    def read_small_file(self, name: str) -> bytes | None:
        try:
            with self._fs.open_input_stream(self.absolute(name)) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def delete_small_file(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(self.absolute(name))

    def read_history(self) -> CheckpointHistory | None:
        """None when the job has none (or it is unreadable: it is informational only)."""
        data = self.read_small_file(HISTORY_FILE)
        try:
            return decode_history(data) if data is not None else None
        except msgspec.DecodeError:
            return None

    def read_metadata(self, checkpoint_id: int) -> CheckpointMetadata:
        return read_metadata_file(self._fs, self.absolute(layout.metadata_path(checkpoint_id)))

    def list_completed(self) -> list[int]:
        """Ids of the checkpoints that have a ``_metadata`` marker, oldest first (their
        metadata not yet read, so not yet validated)."""
        found = []
        try:
            infos = self._fs.get_file_info(pafs.FileSelector(self.job_root))
        except FileNotFoundError:
            return []
        for info in infos:
            cid = layout.parse_checkpoint_dir(info.base_name)
            if cid is None or info.type != pafs.FileType.Directory:
                continue
            marker = self.absolute(layout.metadata_path(cid))
            if self._fs.get_file_info(marker).type == pafs.FileType.File:
                found.append(cid)
        return sorted(found)

    def discard_checkpoint_dir(self, checkpoint_id: int) -> None:
        path = self.absolute(layout.checkpoint_dir(checkpoint_id))
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_dir(path)

    def delete_files(self, rel_paths: list[str]) -> None:
        for rel_path in rel_paths:
            with contextlib.suppress(FileNotFoundError):
                self._fs.delete_file(self.absolute(rel_path))

    def list_shared(self) -> list[str]:
        """Every file under ``shared/``, relative to the job root."""
        selector = pafs.FileSelector(self.absolute(layout.SHARED_DIR), recursive=True)
        try:
            infos = self._fs.get_file_info(selector)
        except FileNotFoundError:
            return []
        root = self.job_root.rstrip("/") + "/"
        found = []
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            # Some file systems return paths with a scheme or host before the root.
            at = info.path.find(root)
            if at < 0:
                raise OSError(f"listed {info.path}, which is not under {root}")
            found.append(info.path[at + len(root) :])
        return sorted(found)

    def list_checkpoint_dirs(self) -> list[int]:
        """Ids of every ``chk-N`` directory, completed or not."""
        try:
            infos = self._fs.get_file_info(pafs.FileSelector(self.job_root))
        except FileNotFoundError:
            return []
        ids = (
            layout.parse_checkpoint_dir(i.base_name)
            for i in infos
            if i.type == pafs.FileType.Directory
        )
        return sorted(cid for cid in ids if cid is not None)

    def discard_shared_dir(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_dir(self.absolute(layout.SHARED_DIR))

    def check_writable(
        self,
        what: str = "checkpoint directory",
        hint: str = "choose another directory with set_checkpoint_storage() or --checkpoint-dir",
    ) -> None:
        """Fails early, with the path, where the job could not write its checkpoints."""
        probe = posixpath.join(self.job_root, f".probe-{uuid.uuid4().hex}")
        try:
            self._make_dir(self.job_root)
            with self._fs.open_output_stream(probe) as out:
                out.write(b"ok")
            self._fs.get_file_info(pafs.FileSelector(self.job_root))  # listing is needed too
            self._fs.delete_file(probe)
        except OSError as e:
            raise StorageConfigError(
                f"{what} {self.job_root_uri} is not writable: {e}; "
                f"{file_systems.explain(self.job_root_uri, e)}; or {hint}"
            ) from e

    def delete_root(self) -> None:
        """Deletes the whole directory (a savepoint disposed of)."""
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_dir(self.job_root)


class FileSystemSavepointStorage:
    """Savepoint directories on any file system pyarrow.fs reaches (``SavepointStorage``)."""

    def create(self, target_dir: str, job_id: str) -> str:
        name = layout.savepoint_dir_name(job_id, uuid.uuid4().hex[:12])
        location = f"{target_dir.rstrip('/')}/{name}"
        CheckpointDirectory(location).check_writable(
            "savepoint directory", "choose another target directory"
        )
        return location

    def write_metadata(self, location: str, metadata: CheckpointMetadata) -> str:
        return CheckpointDirectory(location).write_metadata(metadata, layout.METADATA_FILE)

    def discard(self, location: str) -> None:
        CheckpointDirectory(location).delete_root()

    def dispose(self, root: str, metadata: CheckpointMetadata) -> None:
        if metadata.is_savepoint:
            self.discard(root)
            return
        storage = CheckpointDirectory(root)
        storage.discard_checkpoint_dir(metadata.checkpoint_id)
        storage.delete_files(sorted(metadata.shared_paths()))


def write_whole_object(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    """Uploads ``data`` as one object (a single PUT when it fits one part). pyarrow has no
    way to abort an upload, and closing a stream completes it: should the write fail, the
    object is closed and then deleted, so that no partial object stays."""
    out = fs.open_output_stream(path)
    try:
        out.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            out.close()
        with contextlib.suppress(OSError):
            fs.delete_file(path)
        raise
    out.close()


def _copy_summed(src, out) -> tuple[int, str]:
    """Copies ``src`` to ``out`` in chunks; returns the size and the checksum of what passed."""
    digest = checksummer()
    size = 0
    while chunk := src.read(_COPY_CHUNK):
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def read_metadata_file(fs: pafs.FileSystem, path: str) -> CheckpointMetadata:
    try:
        with fs.open_input_stream(path) as f:
            data = f.read()
    except FileNotFoundError as e:
        raise CorruptCheckpointError(path, "no such file") from e
    return decode_metadata(data, path)


def locate_snapshot(uri: str) -> tuple[str, CheckpointMetadata]:
    """For ``-s``: a savepoint's or a checkpoint's directory, or its ``_metadata`` file, as
    (the URI its paths are relative to, its metadata). A savepoint's paths are relative to its
    own directory; a checkpoint's to its job's directory, the parent of its ``chk-N``."""
    uri = uri.rstrip("/")
    if uri.endswith("/" + layout.METADATA_FILE) or uri == layout.METADATA_FILE:
        uri = uri[: -len(layout.METADATA_FILE)].rstrip("/")
    fs, directory = resolve_filesystem(uri)
    metadata = read_metadata_file(fs, posixpath.join(directory, layout.METADATA_FILE))
    if metadata.is_savepoint:
        return uri, metadata
    parent, _, name = uri.rpartition("/")
    if layout.parse_checkpoint_dir(name) is None or not parent:
        raise StorageConfigError(
            f"{uri!r} holds the metadata of checkpoint {metadata.checkpoint_id} but is not its "
            "chk-<N> directory inside the job's directory, where its state files are; name "
            "that directory"
        )
    return parent, metadata
