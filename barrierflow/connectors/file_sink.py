"""FileSink: exactly-once part files by two-phase commit, as JSON Lines or Parquet, in a local
directory or on any file system pyarrow reaches (``s3://bucket/out``: object stores included).

Lifecycle of a part file of subtask *s* (how each step is done per kind of directory:
``part_files.py``)::

    .part-<s>-<uuid>.inprogress   being written (hidden; on object stores not visible at all)
    .part-<s>-<uuid>.pending      complete and durable at a barrier, recorded in the checkpoint
                                  (hidden)
    part-<s>-<checkpoint>-<uuid><suffix>   committed once the checkpoint completed (visible;
                                  prefix and suffix as an OutputFileConfig says)

Only committed files are visible: readers (Spark's included) skip names starting with "." or
"_". Every part file is closed at the barrier, whatever the format: bulk formats such as Parquet
can only be written whole (Flink's rule for them), and the row format follows the same rule; a
RollingPolicy may close one earlier as well (``file_sink_options.py``). With a BucketAssigner,
each bucket (a directory under the base path, per hour say: ``bucket_assigner.py``) has its
own open part file.
Commit is idempotent: a committable whose final file exists is done. A committable names its
directory, so that a job restored with another output directory (from a savepoint, say) still
commits, or finds committed, what the snapshot recorded, where it was written.
"""

from __future__ import annotations

import posixpath
import re
import time
import uuid
from typing import Any

from barrierflow.connectors.bucket_assigner import BucketAssigner
from barrierflow.connectors.file_format import FileFormat, JsonLines, PartWriter
from barrierflow.connectors.file_sink_options import OutputFileConfig, RollingPolicy
from barrierflow.connectors.part_files import (
    PART_PREFIX,
    FileSystemPartDirectory,
    PartDirectory,
    part_directory,
)
from barrierflow.connectors.sink import SinkWriter, SinkWriterContext


class FileSink:
    """``FileSink(directory)`` writes JSON Lines; PyFlink's builders
    ``FileSink.for_row_format(directory, Encoder.simple_string_encoder()).build()`` write
    lines of text, ``FileSink.for_bulk_format(directory, ParquetWriterFactory(schema)).build()``
    Parquet. ``directory``: a local path or a URI."""

    def __init__(
        self,
        directory: str,
        file_format: FileFormat | None = None,
        output_file_config: OutputFileConfig | None = None,
        rolling_policy: RollingPolicy | None = None,
        bucket_assigner: BucketAssigner | None = None,
    ) -> None:
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"FileSink needs a directory, got {directory!r}")
        if file_format is not None and not hasattr(file_format, "open_part"):
            raise ValueError(
                f"FileSink needs a file format such as ParquetWriterFactory(schema), "
                f"got {file_format!r:.200}"
            )
        if output_file_config is not None and not isinstance(output_file_config, OutputFileConfig):
            raise ValueError(f"FileSink needs an OutputFileConfig, got {output_file_config!r}")
        if rolling_policy is not None and not isinstance(rolling_policy, RollingPolicy):
            raise ValueError(
                "FileSink needs a RollingPolicy such as RollingPolicy.default_rolling_policy(), "
                f"got {rolling_policy!r}"
            )
        self.directory = directory.removeprefix("file://")
        self.file_format = file_format if file_format is not None else JsonLines()
        # the file format's suffix unless the program configured the names
        self.output_file_config = output_file_config or OutputFileConfig(
            part_suffix=self.file_format.suffix
        )
        self.rolling_policy = rolling_policy or RollingPolicy.on_checkpoint_rolling_policy()
        if bucket_assigner is not None and not isinstance(bucket_assigner, BucketAssigner):
            raise ValueError(
                "FileSink needs a BucketAssigner such as "
                f"BucketAssigner.date_time_bucket_assigner(), got {bucket_assigner!r}"
            )
        self.bucket_assigner = bucket_assigner or BucketAssigner.base_path_bucket_assigner()

    @staticmethod
    def for_row_format(base_path: str, encoder: FileFormat) -> FileSinkBuilder:
        """PyFlink's row format builder: ``encoder`` is ``Encoder.simple_string_encoder()``
        (or JsonLines())."""
        return FileSinkBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: FileFormat) -> FileSinkBuilder:
        """PyFlink's bulk format builder (``ParquetWriterFactory(schema)``)."""
        return FileSinkBuilder(base_path, writer_factory)

    def check(self, job: Any = None) -> None:
        """On the driver, before the job is submitted: a directory given as a URI (a bucket,
        say) can be written, else ``StorageConfigError`` saying what to check."""
        if "://" in self.directory:
            FileSystemPartDirectory(self.directory).check_writable()

    def create_writer(self, context: SinkWriterContext) -> SinkWriter:
        return FileSinkWriter(
            self.directory,
            context.subtask,
            self.file_format,
            self.output_file_config,
            self.rolling_policy,
            self.bucket_assigner,
        )

    def __repr__(self) -> str:
        return f"FileSink({self.directory!r}, {self.file_format!r})"


class FileSinkBuilder:
    """``FileSink.for_row_format(...)`` / ``for_bulk_format(...)``: ``build()`` makes the
    sink."""

    def __init__(self, base_path: str, file_format: FileFormat) -> None:
        if not hasattr(file_format, "open_part"):
            raise ValueError(
                "FileSink needs an encoder such as Encoder.simple_string_encoder() or a writer "
                f"factory such as ParquetWriterFactory(schema), got {file_format!r:.200}"
            )
        self._path = base_path
        self._format = file_format
        self._names: OutputFileConfig | None = None
        self._rolling: RollingPolicy | None = None
        self._buckets: BucketAssigner | None = None

    def with_output_file_config(self, output_file_config: OutputFileConfig) -> FileSinkBuilder:
        self._names = output_file_config
        return self

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> FileSinkBuilder:
        self._rolling = rolling_policy
        return self

    def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> FileSinkBuilder:
        self._buckets = bucket_assigner
        return self

    def with_bucket_check_interval(self, interval: int) -> FileSinkBuilder:
        """Accepted: the rolling policy's time limits are checked when a bucket is written to
        (and every part file closes at the barrier)."""
        return self

    def build(self) -> FileSink:
        return FileSink(self._path, self._format, self._names, self._rolling, self._buckets)


# A hidden part file this sink wrote: ``.part-<subtask>-<uuid>.inprogress|pending``.
_PART_NAME = re.compile(re.escape(PART_PREFIX) + r"(\d+)-[0-9a-f]{32}\.(?:inprogress|pending)")


class _OpenPart:
    """The part file a bucket is writing, open across calls until the barrier or a roll."""

    __slots__ = ("directory", "file", "name", "opened_s", "part", "parts", "written_s")

    def __init__(self, directory: str, parts: PartDirectory, name: str, now: float) -> None:
        self.directory, self.parts, self.name = directory, parts, name
        self.file = parts.open(name)
        self.part: PartWriter | None = None
        self.opened_s = self.written_s = now


class FileSinkWriter:
    def __init__(
        self,
        directory: str,
        subtask: int,
        file_format: FileFormat,
        names: OutputFileConfig | None = None,
        rolling: RollingPolicy | None = None,
        buckets: BucketAssigner | None = None,
    ) -> None:
        self._dir = directory
        self._subtask = subtask
        self._format = file_format
        self._names = names or OutputFileConfig(part_suffix=file_format.suffix)
        self._rolling = rolling or RollingPolicy.on_checkpoint_rolling_policy()
        self._buckets = buckets or BucketAssigner.base_path_bucket_assigner()
        self._part_dirs = {directory: part_directory(directory)}  # by directory, made once
        self._open: dict[str, _OpenPart] = {}  # by bucket
        self._sealed: list[tuple[str, str, str]] = []  # (dir, pending, id) rolled since the barrier

    def write(self, records: list[Any]) -> None:
        """``records`` go to one bucket: the assigner's for the time they are written."""
        if not records:
            return
        now = time.monotonic()
        bucket = self._buckets.bucket_id(time.time())
        open_part = self._open.get(bucket)
        if open_part is not None and self._rolling.should_roll(
            open_part.file.tell(), open_part.opened_s, open_part.written_s, now
        ):
            self._seal(bucket)
            open_part = None
        if open_part is None:
            open_part = self._open[bucket] = self._new_part(bucket, now)
        open_part.part.add(records)
        open_part.written_s = now

    def _parts_of(self, directory: str) -> PartDirectory:
        parts = self._part_dirs.get(directory)
        if parts is None:
            parts = self._part_dirs[directory] = part_directory(directory)
        return parts

    def _new_part(self, bucket: str, now: float) -> _OpenPart:
        directory = posixpath.join(self._dir, bucket) if bucket else self._dir
        name = f"{PART_PREFIX}{self._subtask}-{uuid.uuid4().hex}"
        open_part = _OpenPart(directory, self._parts_of(directory), name, now)
        open_part.part = self._format.open_part(open_part.file)
        return open_part

    def _seal(self, bucket: str) -> None:
        """Closes the bucket's open part file: complete and durable, visible once committed."""
        p = self._open.pop(bucket)
        p.part.finish()
        self._sealed.append((p.directory, p.parts.seal(p.name, p.file), p.name[-12:]))

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        for bucket in list(self._open):
            self._seal(bucket)
        sealed, self._sealed = self._sealed, []
        prefix, suffix = self._names.part_prefix, self._names.part_suffix
        checkpoint = f"{max(checkpoint_id, 0):06d}"
        return [
            {
                "dir": directory,
                "pending": pending,
                "final": f"{prefix}-{self._subtask}-{checkpoint}-{file_id}{suffix}",
            }
            for directory, pending, file_id in sealed
        ]

    def commit(self, committables: list[dict]) -> None:
        for c in committables:
            directory = c.get("dir", self._dir)  # no "dir": written before committables named it
            if not self._parts_of(directory).publish(c["pending"], c["final"]):
                raise RuntimeError(
                    f"FileSink cannot commit {c['final']}: neither it nor its pending file "
                    f"{c['pending']} exists in {directory}; files were removed by hand?"
                )

    def recover(self, committables: list[dict], parallelism: int) -> None:
        """``committables``: those of *every* subtask of the restored checkpoint (union state),
        so that each is committed before any subtask deletes leftovers by file name: in the
        base path and in the buckets under it that the checkpoint names. (A bucket first
        written after the checkpoint keeps its hidden leftovers, as Flink's do: looking
        through every directory under the base path would also find other sinks' files.)"""
        self.commit(committables)
        under = self._dir.rstrip("/") + "/"
        buckets = {c["dir"] for c in committables if c.get("dir", "").startswith(under)}
        for directory in [self._dir, *sorted(buckets)]:
            parts = self._parts_of(directory)
            for name in parts.leftovers():
                match = _PART_NAME.fullmatch(name)
                if match is None:
                    continue  # not a part file of a FileSink (a checksum file, say)
                owner = int(match.group(1))
                if owner == self._subtask or (self._subtask == 0 and owner >= parallelism):
                    parts.delete(name)

    def close(self) -> None:
        for p in self._open.values():
            p.parts.discard(p.name, p.file)
        self._open = {}
        self._sealed = []  # rolled, in no checkpoint: recovery deletes them, by name


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
