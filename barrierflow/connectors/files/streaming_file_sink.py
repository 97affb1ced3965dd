"""PyFlink's ``StreamingFileSink`` (deprecated there since Flink 1.15 for FileSink): a
``SinkFunction`` for ``stream.add_sink`` whose builders are FileSink's, so that it writes
FileSink's exactly-once part files (``file_sink.py``). Performs no I/O."""

from __future__ import annotations

import warnings
from typing import Any

from barrierflow.connectors.files.bucket_assigner import BucketAssigner
from barrierflow.connectors.files.file_format import FileFormat
from barrierflow.connectors.files.file_sink import FileSink, FileSinkBuilder
from barrierflow.connectors.files.file_sink_options import OutputFileConfig, RollingPolicy
from barrierflow.datastream.functions.one_input import SinkFunction


class StreamingFileSink(SinkFunction):
    """Part files in buckets under a base path, committed at checkpoints: a FileSink."""

    def __init__(self, file_sink: FileSink) -> None:
        warnings.warn("Deprecated in 1.15. Use FileSink instead.", DeprecationWarning, stacklevel=2)
        super().__init__(file_sink)

    class BaseBuilder:
        def __init__(self, builder: FileSinkBuilder) -> None:
            self._builder = builder

        def with_bucket_check_interval(self, interval: int) -> Any:
            self._builder.with_bucket_check_interval(interval)
            return self

        def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
            self._builder.with_bucket_assigner(bucket_assigner)
            return self

        def with_rolling_policy(self, policy: RollingPolicy) -> Any:
            self._builder.with_rolling_policy(policy)
            return self

        def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
            self._builder.with_output_file_config(output_file_config)
            return self

        def build(self) -> StreamingFileSink:
            return StreamingFileSink(self._builder.build())

    class DefaultRowFormatBuilder(BaseBuilder):
        """Rows through an ``Encoder`` (FileSink's row format)."""

    class DefaultBulkFormatBuilder(BaseBuilder):
        """Whole files through a bulk writer factory (FileSink's bulk format)."""

    @staticmethod
    def for_row_format(
        base_path: str, encoder: FileFormat
    ) -> StreamingFileSink.DefaultRowFormatBuilder:
        return StreamingFileSink.DefaultRowFormatBuilder(
            FileSink.for_row_format(base_path, encoder)
        )

    @staticmethod
    def for_bulk_format(
        base_path: str, writer_factory: FileFormat
    ) -> StreamingFileSink.DefaultBulkFormatBuilder:
        return StreamingFileSink.DefaultBulkFormatBuilder(
            FileSink.for_bulk_format(base_path, writer_factory)
        )
