"""PyFlink's ``pyflink.datastream.connectors.file_system``."""

from barrierflow.connectors.files import (
    BucketAssigner,
    BulkFormat,
    FileSink,
    FileSinkBuilder,
    FileSource,
    FileSourceBuilder,
    OutputFileConfig,
    OutputFileConfigBuilder,
    RollingPolicy,
    StreamFormat,
)
from barrierflow.connectors.files.file_source_providers import (
    FileEnumeratorProvider,
    FileSplitAssignerProvider,
)
from barrierflow.connectors.files.streaming_file_sink import StreamingFileSink

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
