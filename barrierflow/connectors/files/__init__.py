"""Files: FileSource (a file per split, read by a stream or bulk format: lines of text here;
CSV, Avro and Parquet in ``connectors/formats/``) and FileSink (exactly-once part files, JSON
Lines, lines of text, Parquet, or the bulk formats of ``connectors/formats/``, in buckets).
Each name loads when first asked for, so that importing the package (or its pure enumerator)
loads no pyarrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "BucketAssigner": "barrierflow.connectors.files.bucket_assigner",
        "BulkFormat": "barrierflow.connectors.files.file_source",
        "FileSink": "barrierflow.connectors.files.file_sink",
        "FileSinkBuilder": "barrierflow.connectors.files.file_sink",
        "FileSource": "barrierflow.connectors.files.file_source",
        "FileSourceBuilder": "barrierflow.connectors.files.file_source",
        "OutputFileConfig": "barrierflow.connectors.files.file_sink_options",
        "OutputFileConfigBuilder": "barrierflow.connectors.files.file_sink_options",
        "ParquetWriterFactory": "barrierflow.connectors.files.parquet",
        "RollingPolicy": "barrierflow.connectors.files.file_sink_options",
        "StreamFormat": "barrierflow.connectors.files.file_source",
    },
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
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
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
    from barrierflow.connectors.files.parquet import ParquetWriterFactory
