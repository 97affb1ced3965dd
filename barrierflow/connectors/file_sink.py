"""FileSink: exactly-once part files by two-phase commit, as JSON Lines or Parquet, in a local
directory or on any file system pyarrow reaches (``s3://bucket/out``: object stores included).

Lifecycle of a part file of subtask *s* (how each step is done per kind of directory:
``part_files.py``)::

    .part-<s>-<uuid>.inprogress   being written (hidden; on object stores not visible at all)
    .part-<s>-<uuid>.pending      complete and durable at a barrier, recorded in the checkpoint
                                  (hidden)
    part-<s>-<checkpoint>-<uuid><suffix>   committed once the checkpoint completed (visible)

Only committed files are visible: readers (Spark's included) skip names starting with "." or
"_". Every part file is closed at the barrier, whatever the format: bulk formats such as Parquet
can only be written whole (Flink's rule for them), and the row format follows the same rule.
Commit is idempotent: a committable whose final file exists is done. A committable names its
directory, so that a job restored with another output directory (from a savepoint, say) still
commits, or finds committed, what the snapshot recorded, where it was written.
"""

from __future__ import annotations

import uuid
from typing import Any, BinaryIO

from barrierflow.connectors.file_format import FileFormat, JsonLines, PartWriter
from barrierflow.connectors.part_files import PART_PREFIX, FileSystemPartDirectory, part_directory
from barrierflow.connectors.sink import SinkWriter, SinkWriterContext


class FileSink:
    """``FileSink(directory)`` writes JSON Lines; ``FileSink.for_bulk_format(directory,
    ParquetWriterFactory(schema))`` writes Parquet. ``directory``: a local path or a URI."""

    def __init__(self, directory: str, file_format: FileFormat | None = None) -> None:
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"FileSink needs a directory, got {directory!r}")
        if file_format is not None and not hasattr(file_format, "open_part"):
            raise ValueError(
                f"FileSink needs a file format such as ParquetWriterFactory(schema), "
                f"got {file_format!r:.200}"
            )
        self.directory = directory.removeprefix("file://")
        self.file_format = file_format if file_format is not None else JsonLines()

    @classmethod
    def for_row_format(cls, directory: str, file_format: FileFormat | None = None) -> FileSink:
        return cls(directory, file_format)

    @classmethod
    def for_bulk_format(cls, directory: str, writer_factory: FileFormat) -> FileSink:
        return cls(directory, writer_factory)

    def check(self, job: Any = None) -> None:
        """On the driver, before the job is submitted: a directory given as a URI (a bucket,
        say) can be written, else ``StorageConfigError`` saying what to check."""
        if "://" in self.directory:
            FileSystemPartDirectory(self.directory).check_writable()

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return FileSinkWriter(self.directory, context.subtask, self.file_format)

    def __repr__(self) -> str:
        return f"FileSink({self.directory!r}, {self.file_format!r})"


class FileSinkWriter:
    def __init__(self, directory: str, subtask: int, file_format: FileFormat) -> None:
        self._dir = directory
        self._parts = part_directory(directory)
        self._subtask = subtask
        self._format = file_format
        self._file: BinaryIO | None = None
        self._part: PartWriter | None = None
        self._name: str | None = None

    def write(self, records: list[Any]) -> None:
        if not records:
            return
        if self._part is None:
            self._name = f"{PART_PREFIX}{self._subtask}-{uuid.uuid4().hex}"
            self._file = self._parts.open(self._name)  # open across calls until the barrier
            self._part = self._format.open_part(self._file)
        self._part.add(records)

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        if self._part is None:
            return []
        self._part.finish()
        self._part = None
        pending = self._parts.seal(self._name, self._file)
        self._file = None
        final = (
            f"part-{self._subtask}-{max(checkpoint_id, 0):06d}-{self._name[-12:]}"
            f"{self._format.suffix}"
        )
        return [{"dir": self._dir, "pending": pending, "final": final}]

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            directory = c.get("dir", self._dir)  # no "dir": written before committables named it
            parts = self._parts if directory == self._dir else part_directory(directory)
            if not parts.publish(c["pending"], c["final"]):
                raise RuntimeError(
                    f"FileSink cannot commit {c['final']}: neither it nor its pending file "
                    f"{c['pending']} exists in {directory}; files were removed by hand?"
                )

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """``committables``: those of *every* subtask of the restored checkpoint (union state),
        so that each is committed before any subtask deletes leftovers by file name."""
        self.commit(committables)
        for name in self._parts.leftovers():
            owner = int(name.split("-", 2)[1])
            if owner == self._subtask or (self._subtask == 0 and owner >= parallelism):
                self._parts.delete(name)

    def close(self) -> None:
        if self._file is not None:
            self._parts.discard(self._name, self._file)
            self._file = None
            self._part = None


class DiscardingSink:
    """Drops every record; for benchmarks and tests of the pipeline alone."""

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return _DiscardingWriter()


class _DiscardingWriter:
    def write(self, records: list[Any]) -> None:
        pass

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        return []

    def commit(self, committables: list[dict]) -> None:
        pass

    def recover(self, committables: list[dict], parallelism: int) -> None:
        pass

    def close(self) -> None:
        pass
