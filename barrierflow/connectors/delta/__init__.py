"""Internal: Delta Lake, ``DeltaSink`` exactly once by one Delta transaction per checkpoint and
``DeltaSource``; the public names are in ``barrierflow.datastream.connectors.delta``. The names
this package offered before are deprecated: each warns and gives the public one. Needs delta-rs
only where a job reads or writes Delta."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        "DeltaSink": "barrierflow.datastream.connectors.delta.DeltaSink",
        "DeltaSource": "barrierflow.datastream.connectors.delta.DeltaSource",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
