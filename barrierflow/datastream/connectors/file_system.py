"""PyFlink's ``pyflink.datastream.connectors.file_system``: ``FileSource`` (a file per split, in
a stream or bulk format) and ``FileSink`` (exactly-once part files, in buckets), built in
``barrierflow/connectors/files/``. Each name loads when first asked for, so that importing this
module loads no pyarrow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_FILES = "barrierflow.connectors.files"
_NAMES = LazyNames(
    __name__,
    {
        "BucketAssigner": f"{_FILES}.bucket_assigner",
        "BulkFormat": f"{_FILES}.file_source",
        "FileEnumeratorProvider": f"{_FILES}.file_source_providers",
        "FileSink": f"{_FILES}.file_sink",
        "FileSinkBuilder": f"{_FILES}.file_sink",
        "FileSource": f"{_FILES}.file_source",
        "FileSourceBuilder": f"{_FILES}.file_source",
        "FileSplitAssignerProvider": f"{_FILES}.file_source_providers",
        "OutputFileConfig": f"{_FILES}.file_sink_options",
        "OutputFileConfigBuilder": f"{_FILES}.file_sink_options",
        "RollingPolicy": f"{_FILES}.file_sink_options",
        "StreamFormat": f"{_FILES}.file_source",
        "StreamingFileSink": f"{_FILES}.streaming_file_sink",
    },
)

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSinkBuilder",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "OutputFileConfig",
    "OutputFileConfigBuilder",
    "RollingPolicy",
    "StreamFormat",
    "StreamingFileSink",
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
    from barrierflow.connectors.files.file_source_providers import (
        FileEnumeratorProvider,
        FileSplitAssignerProvider,
    )
    from barrierflow.connectors.files.streaming_file_sink import StreamingFileSink
