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

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "FileSink",
    "FileSinkBuilder",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "OutputFileConfigBuilder",
    "RollingPolicy",
    "StreamFormat",
]
