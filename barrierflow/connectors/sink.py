"""Deprecated: the connector interface's names are at one public path,
``barrierflow.datastream.connectors.base``. Each name here warns and gives the one there."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_BASE = "barrierflow.datastream.connectors.base"
_MOVED = MovedNames(
    __name__,
    {
        "CommitRetryPolicy": f"{_BASE}.CommitRetryPolicy",
        "Committable": f"{_BASE}.Committable",
        "Committer": f"{_BASE}.Committer",
        "CommitterContext": f"{_BASE}.CommitterContext",
        "GlobalCommitter": f"{_BASE}.GlobalCommitter",
        "JobSettings": f"{_BASE}.JobSettings",
        "Recovery": f"{_BASE}.Recovery",
        "Sink": f"{_BASE}.Sink",
        "SinkWriter": f"{_BASE}.SinkWriter",
        "SinkWriterContext": f"{_BASE}.SinkWriterContext",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
