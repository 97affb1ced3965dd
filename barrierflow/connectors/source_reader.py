"""The source reader interface's public path (``interfaces/source_reader.py`` defines it).
Performs no I/O."""

from barrierflow.connectors.interfaces.source_reader import (
    SourceReader,
    SourceReaderContext,
    SplitRun,
    tells_splits,
)

__all__ = ["SourceReader", "SourceReaderContext", "SplitRun", "tells_splits"]
