"""The source interface's public path (``interfaces/source.py`` defines it). Performs no I/O."""

from barrierflow.connectors.interfaces.source import (
    Boundedness,
    Source,
    SourceReader,
    SourceReaderContext,
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
    SplitRun,
    tells_splits,
)

__all__ = [
    "Boundedness",
    "Source",
    "SourceReader",
    "SourceReaderContext",
    "Split",
    "SplitEnumerator",
    "SplitEnumeratorContext",
    "SplitRun",
    "tells_splits",
]
