"""Internal: Apache Iceberg, ``IcebergSink`` exactly once by one append snapshot per checkpoint
and ``IcebergSource``; the public names are in ``barrierflow.datastream.connectors.iceberg``.
The names this package offered before are deprecated: each warns and gives the public one.
Needs pyiceberg only where a job reads or writes Iceberg."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        "IcebergSink": "barrierflow.datastream.connectors.iceberg.IcebergSink",
        "IcebergSource": "barrierflow.datastream.connectors.iceberg.IcebergSource",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
