"""What a window operator is asked to do, as the API records it (``KeyedStream.window(...)
.trigger(...).allowed_lateness(...).reduce(...)``) and the executors receive it. Performs no I/O.

Two ways to keep a window's contents: one accumulator per window (``reduce``, ``aggregate``:
constant state whatever the window's size), or every element (``process``, ``apply``, and any
window with an evictor, which must see the elements to evict some).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from barrierflow.windowing.window_assigners import WindowAssigner
from barrierflow.windowing.window_triggers import CountEvictor, Trigger


class Contents(enum.Enum):
    REDUCE = "reduce"  # function: a ReduceFunction or a function of two values
    AGGREGATE = "aggregate"  # function: an AggregateFunction
    ELEMENTS = "elements"  # no function: the window function gets every element


@dataclass(frozen=True)
class WindowSpec:
    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any]
    contents: Contents
    function: Any = None
    window_function: Any = None  # a ProcessWindowFunction or a WindowFunction, or None
    evictor: CountEvictor | None = None
    allowed_lateness_ms: int = 0
    late_data_tag: str | None = None  # the side output of late records (else dropped)

    @property
    def buffers_elements(self) -> bool:
        return self.contents is Contents.ELEMENTS or self.evictor is not None
