"""Public home of the user function classes (``from barrierflow.functions import ...``)."""

from barrierflow.api.functions import (
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedProcessFunction,
    MapFunction,
    RuntimeContext,
)

__all__ = [
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeyedProcessFunction",
    "MapFunction",
    "RuntimeContext",
]
