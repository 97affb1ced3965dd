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

from typing import Any

from barrierflow.connectors.files.bucket_assigner import BucketAssigner
from barrierflow.connectors.files.file_committable import FileCommittableCodec
from barrierflow.connectors.files.file_committer import FileCommitter
from barrierflow.connectors.files.file_format import FileFormat, JsonLines
from barrierflow.connectors.files.file_sink_options import OutputFileConfig, RollingPolicy
from barrierflow.connectors.files.file_sink_writer import FileSinkWriter
from barrierflow.connectors.files.part_files import FileSystemPartDirectory
from barrierflow.connectors.interfaces.sink import CommitterContext, Sink, SinkWriterContext


class FileSink(Sink):
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

    def create_writer(self, context: SinkWriterContext) -> FileSinkWriter:
        return FileSinkWriter(
            self.directory,
            context.subtask,
            self.file_format,
            self.output_file_config,
            self.rolling_policy,
            self.bucket_assigner,
        )

    def create_committer(self, context: CommitterContext) -> FileCommitter:
        return FileCommitter(self.directory)

    def committable_codec(self) -> FileCommittableCodec:
        return FileCommittableCodec(self.directory)

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
