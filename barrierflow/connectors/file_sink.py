"""FileSink: exactly-once part files by two-phase commit, as JSON Lines or Parquet.

Lifecycle of a part file of subtask *s*::

    .part-<s>-<uuid>.inprogress   being written (hidden)
    .part-<s>-<uuid>.pending      closed at a barrier, recorded in the checkpoint (hidden)
    part-<s>-<checkpoint>-<uuid><suffix>   committed once the checkpoint completed (visible)

Only committed files are visible: readers (Spark's included) skip names starting with "." or
"_". Every part file is closed at the barrier, whatever the format: bulk formats such as Parquet
can only be written whole (Flink's rule for them), and the row format follows the same rule.
Commit is a rename and is idempotent: a committable whose final file exists is done. A
committable names its directory, so that a job restored with another output directory (from a
savepoint, say) still commits, or finds committed, what the snapshot recorded, where it was
written.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from barrierflow.connectors.file_format import FileFormat, JsonLines, PartWriter
from barrierflow.connectors.sink import SinkWriter, SinkWriterContext


class FileSink:
    """``FileSink(directory)`` writes JSON Lines; ``FileSink.for_bulk_format(directory,
    ParquetWriterFactory(schema))`` writes Parquet."""

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

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return FileSinkWriter(self.directory, context.subtask, self.file_format)

    def __repr__(self) -> str:
        return f"FileSink({self.directory!r}, {self.file_format!r})"


class FileSinkWriter:
    def __init__(self, directory: str, subtask: int, file_format: FileFormat) -> None:
        os.makedirs(directory, exist_ok=True)
        self._dir = directory
        self._subtask = subtask
        self._format = file_format
        self._file = None
        self._part: PartWriter | None = None
        self._name: str | None = None

    def write(self, records: list[Any]) -> None:
        if not records:
            return
        if self._part is None:
            self._name = f".part-{self._subtask}-{uuid.uuid4().hex}"
            path = os.path.join(self._dir, self._name + ".inprogress")
            self._file = open(path, "wb")  # noqa: SIM115 - open across calls until the barrier
            self._part = self._format.open_part(self._file)
        self._part.add(records)

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        if self._part is None:
            return []
        self._part.finish()
        self._part = None
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        base = os.path.join(self._dir, self._name)
        os.replace(base + ".inprogress", base + ".pending")
        final = (
            f"part-{self._subtask}-{max(checkpoint_id, 0):06d}-{self._name[-12:]}"
            f"{self._format.suffix}"
        )
        return [{"dir": self._dir, "pending": self._name + ".pending", "final": final}]

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            directory = c.get("dir", self._dir)  # no "dir": written before committables named it
            pending = os.path.join(directory, c["pending"])
            final = os.path.join(directory, c["final"])
            if os.path.exists(final):
                continue
            try:
                os.replace(pending, final)
            except FileNotFoundError:
                if os.path.exists(final):
                    continue  # committed concurrently by another subtask after a rescale
                raise RuntimeError(
                    f"FileSink cannot commit {c['final']}: neither it nor its pending file "
                    f"{c['pending']} exists in {directory}; files were removed by hand?"
                ) from None

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """``committables``: those of *every* subtask of the restored checkpoint (union state),
        so that each is committed before any subtask deletes leftovers by file name."""
        self.commit(committables)
        for name in os.listdir(self._dir):
            if not name.startswith(".part-"):
                continue
            owner = int(name.split("-", 2)[1])
            if owner == self._subtask or (self._subtask == 0 and owner >= parallelism):
                os.remove(os.path.join(self._dir, name))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
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
