"""Files: FileSource (a file per split, read by a stream or bulk format: lines of text here;
CSV, Avro and Parquet in ``connectors/formats/``) and FileSink (exactly-once part files, JSON
Lines, lines of text, Parquet, or the bulk formats of ``connectors/formats/``, in buckets).
Parquet (pyarrow.parquet) is loaded when first named, so that executors of other jobs never
load it."""

from typing import Any

from barrierflow.connectors.files.bucket_assigner import BucketAssigner
from barrierflow.connectors.files.file_sink import FileSink, FileSinkBuilder
from barrierflow.connectors.files.file_sink_options import (
    OutputFileConfig,
    OutputFileConfigBuilder,
    RollingPolicy,
)
from barrierflow.connectors.files.file_source import (
    BulkFormat,
    FileSource,
    FileSourceBuilder,
    StreamFormat,
)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "FileSink",
    "FileSinkBuilder",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "OutputFileConfigBuilder",
    "ParquetWriterFactory",
    "RollingPolicy",
    "StreamFormat",
]


def __getattr__(name: str) -> Any:
    if name == "ParquetWriterFactory":
        from barrierflow.connectors.files.parquet import ParquetWriterFactory

        return ParquetWriterFactory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
