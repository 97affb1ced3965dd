"""Deprecated: ``SequenceSource`` lived here. It is PyFlink's ``NumberSequenceSource`` now, at
``barrierflow.datastream.connectors.number_seq``; the old path warns and gives that class for one
release."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {"SequenceSource": "barrierflow.datastream.connectors.number_seq.NumberSequenceSource"},
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
