"""Deprecated: the window assigners are at PyFlink's path, ``barrierflow.datastream.window``
(defined in ``window_assigners.py``). Each name here warns and gives the one there."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        n: f"barrierflow.datastream.window.{n}"
        for n in (
            "CountSlidingWindowAssigner",
            "CountTumblingWindowAssigner",
            "DynamicEventTimeSessionWindows",
            "DynamicProcessingTimeSessionWindows",
            "EventTimeSessionWindows",
            "GlobalWindows",
            "MergingWindowAssigner",
            "ProcessingTimeSessionWindows",
            "SessionWindowTimeGapExtractor",
            "SlidingEventTimeWindows",
            "SlidingProcessingTimeWindows",
            "TumblingEventTimeWindows",
            "TumblingProcessingTimeWindows",
            "WindowAssigner",
        )
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
