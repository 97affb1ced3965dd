"""Sources and sinks."""

from barrierflow.connectors.file_sink import DiscardingSink, FileSink
from barrierflow.connectors.file_source import FileSource
from barrierflow.connectors.sequence_source import SequenceSource

__all__ = ["DiscardingSink", "FileSink", "FileSource", "SequenceSource"]
