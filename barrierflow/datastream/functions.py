"""PyFlink's ``pyflink.datastream.functions``, at the same path."""

from barrierflow.functions import (
    AggregateFunction,
    AllWindowFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    TimerService,
    WindowFunction,
)

__all__ = [
    "AggregateFunction",
    "AllWindowFunction",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedProcessFunction",
    "MapFunction",
    "ProcessAllWindowFunction",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "RuntimeContext",
    "TimerService",
    "WindowFunction",
]
