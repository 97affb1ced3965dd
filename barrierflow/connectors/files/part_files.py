"""Where FileSink's part files live, and how each becomes visible only when complete.

A part file has three states: being written, pending (complete and durable, recorded in a
checkpoint, still hidden: its name starts with ".", which readers such as Spark skip) and
committed (its final, visible name). Two kinds of directory get there differently:

- a local directory: ``.part-*.inprogress``, flushed and fsynced at the barrier and renamed to
  ``.part-*.pending``; committed by an atomic rename to the final name.
- a directory of any other file system (``s3://``, ``gs://``, ``hdfs://``, through pyarrow):
  the part is uploaded straight to ``.part-*.pending``, and on an object store that object
  exists only once the upload completes at the barrier. Object stores have no rename: commit
  is a server-side copy to the final name (the final object appears whole when the copy
  completes, as any object does) and then a delete of the pending object. Either step may be
  repeated after a failover: a final object that exists is committed, whatever became of the
  pending one (docs/adr/0009-object-storage.md).

**Threading:** the subtask's task thread. **I/O:** every file operation of FileSink.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from typing import BinaryIO, Protocol

import pyarrow.fs as pafs

from barrierflow.checkpoint import file_systems
from barrierflow.errors import StorageConfigError

PART_PREFIX = ".part-"


class PartDirectory(Protocol):
    """The part files of one output directory. ``publish`` must be idempotent: it is repeated
    after a failover, possibly after a crash half-way through it."""

    def open(self, name: str) -> BinaryIO:
        """A new hidden part file ``name`` (``.part-...``), open for writing."""

    def seal(self, name: str, stream: BinaryIO) -> str:
        """Closes the part, complete and durable; the hidden name it is pending under."""

    def discard(self, name: str, stream: BinaryIO) -> None:
        """Closes a part that will never be committed (the writer closed before a barrier)."""

    def publish(self, pending: str, final: str) -> bool:
        """Makes pending part ``pending`` visible as ``final``; False when neither exists."""

    def leftovers(self) -> list[str]:
        """Names of the hidden part files in the directory (pending or being written)."""

    def delete(self, name: str) -> None: ...


def part_directory(directory: str) -> PartDirectory:
    """The part files of ``directory``: a local path, or a URI (``s3://bucket/out``)."""
    if "://" not in directory:
        return LocalPartDirectory(directory)
    return FileSystemPartDirectory(directory)


class PartDirectories:
    """The part directories one writer or committer uses, each made (and created) once."""

    def __init__(self) -> None:
        self._by_path: dict[str, PartDirectory] = {}

    def get(self, directory: str) -> PartDirectory:
        parts = self._by_path.get(directory)
        if parts is None:
            parts = self._by_path[directory] = part_directory(directory)
        return parts


class LocalPartDirectory:
    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self._dir = directory

    def open(self, name: str) -> BinaryIO:
        return open(os.path.join(self._dir, name + ".inprogress"), "wb")

    def seal(self, name: str, stream: BinaryIO) -> str:
        stream.flush()
        os.fsync(stream.fileno())
        stream.close()
        base = os.path.join(self._dir, name)
        os.replace(base + ".inprogress", base + ".pending")
        return name + ".pending"

    def discard(self, name: str, stream: BinaryIO) -> None:
        stream.close()  # recovery deletes it, by name

    def publish(self, pending: str, final: str) -> bool:
        pending_path = os.path.join(self._dir, pending)
        final_path = os.path.join(self._dir, final)
        if os.path.exists(final_path):
            return True
        try:
            os.replace(pending_path, final_path)
        except FileNotFoundError:
            return os.path.exists(final_path)  # committed concurrently after a rescale
        return True

    def leftovers(self) -> list[str]:
        return [n for n in os.listdir(self._dir) if n.startswith(PART_PREFIX)]

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self._dir, name))


class FileSystemPartDirectory:
    """A directory of a pyarrow file system; on object stores, see the module docstring."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._fs, self._root = file_systems.resolve(uri)
        self._object_store = file_systems.is_object_store(self._fs)
        if not self._object_store:
            self._fs.create_dir(self._root, recursive=True)

    def _path(self, name: str) -> str:
        return posixpath.join(self._root, name)

    def _exists(self, name: str) -> bool:
        return self._fs.get_file_info(self._path(name)).type == pafs.FileType.File

    def open(self, name: str) -> BinaryIO:
        # Pending from the start: on an object store nothing is visible before the upload
        # completes at ``seal``; elsewhere the name is hidden, and only sealed parts are ever
        # recorded in a checkpoint.
        return self._fs.open_output_stream(self._path(name + ".pending"))

    def seal(self, name: str, stream: BinaryIO) -> str:
        stream.close()  # completes the upload: the object now exists, whole
        return name + ".pending"

    def discard(self, name: str, stream: BinaryIO) -> None:
        # Closing completes the upload (pyarrow cannot abort one): then the object goes.
        with contextlib.suppress(OSError):
            stream.close()
        self.delete(name + ".pending")

    def publish(self, pending: str, final: str) -> bool:
        if self._exists(final):
            self.delete(pending)  # a crash may have come between the copy and the delete
            return True
        if not self._exists(pending):
            return False
        if self._object_store:
            try:
                self._fs.copy_file(self._path(pending), self._path(final))
            except OSError:
                if self._exists(final):  # copied concurrently after a rescale
                    return True
                raise
            self.delete(pending)
        else:
            self._fs.move(self._path(pending), self._path(final))
        return True

    def leftovers(self) -> list[str]:
        selector = pafs.FileSelector(self._root, allow_not_found=True)
        return [
            i.base_name
            for i in self._fs.get_file_info(selector)
            if i.type == pafs.FileType.File and i.base_name.startswith(PART_PREFIX)
        ]

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(self._path(name))

    def check_writable(self) -> None:
        """Writes and deletes a hidden probe file; ``StorageConfigError`` if that fails."""
        probe = f".probe-{uuid.uuid4().hex}"
        try:
            with self._fs.open_output_stream(self._path(probe)) as out:
                out.write(b"ok")
            self._fs.delete_file(self._path(probe))
        except OSError as e:
            raise StorageConfigError(
                f"FileSink directory {self._uri} is not writable: {e}; "
                f"{file_systems.explain(self._uri, e)}"
            ) from e
