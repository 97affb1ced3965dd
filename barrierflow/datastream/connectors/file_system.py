"""PyFlink's ``pyflink.datastream.connectors.file_system``."""

from barrierflow.connectors.bucket_assigner import BucketAssigner
from barrierflow.connectors.file_sink import FileSink, FileSinkBuilder
from barrierflow.connectors.file_sink_options import (
    OutputFileConfig,
    OutputFileConfigBuilder,
    RollingPolicy,
)
from barrierflow.connectors.file_source import FileSource, FileSourceBuilder, StreamFormat

__all__ = [
    "BucketAssigner",
    "FileSink",
    "FileSinkBuilder",
    "FileSource",
    "FileSourceBuilder",
    "OutputFileConfig",
    "OutputFileConfigBuilder",
    "RollingPolicy",
    "StreamFormat",
]
