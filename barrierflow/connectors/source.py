"""Deprecated: the connector interface's names are at one public path,
``barrierflow.datastream.connectors.base``. Each name here warns and gives the one there."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_BASE = "barrierflow.datastream.connectors.base"
_MOVED = MovedNames(
    __name__,
    {
        "Boundedness": f"{_BASE}.Boundedness",
        "Source": f"{_BASE}.Source",
        "SourceReader": f"{_BASE}.SourceReader",
        "SourceReaderContext": f"{_BASE}.SourceReaderContext",
        "Split": f"{_BASE}.Split",
        "SplitEnumerator": f"{_BASE}.SplitEnumerator",
        "SplitEnumeratorContext": f"{_BASE}.SplitEnumeratorContext",
        "SplitRun": f"{_BASE}.SplitRun",
        "tells_splits": "barrierflow.connectors.interfaces.source_reader.tells_splits",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
