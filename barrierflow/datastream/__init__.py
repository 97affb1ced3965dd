"""PyFlink's ``pyflink.datastream``, at the same path: a PyFlink DataStream program changes only
its imports. Each name is defined once in barrierflow's own modules and re-exported here, lazily
(module ``__getattr__``), so that an executor unpickling a user function of
``barrierflow.datastream.functions`` loads neither the API nor the JobMaster.

``AllWindowFunction`` and ``ProcessAllWindowFunction`` here are deprecated (PyFlink has them in
``functions`` only): they warn and give those."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import LazyNames, MovedNames

_EXPORTS = {
    "StreamExecutionEnvironment": "barrierflow.api.environment",
    "DataStream": "barrierflow.api.datastream",
    "KeyedStream": "barrierflow.api.datastream",
    "DataStreamSink": "barrierflow.api.datastream",
    "WindowedStream": "barrierflow.api.windowed_stream",
    "ConnectedStreams": "barrierflow.api.connected_streams",
    "BroadcastStream": "barrierflow.api.connected_streams",
    "BroadcastConnectedStream": "barrierflow.api.connected_streams",
    "CheckpointingMode": "barrierflow.api.checkpoint_config",
    "RuntimeExecutionMode": "barrierflow.api.execution_mode",
    "CheckpointConfig": "barrierflow.api.checkpoint_config",
    "ExternalizedCheckpointRetention": "barrierflow.api.checkpoint_config",
    "TimeDomain": "barrierflow.datastream.functions.one_input",
    "OutputTag": "barrierflow.datastream.output_tag",
    "DeadLetter": "barrierflow.datastream.output_tag",
    "AsyncDataStream": "barrierflow.api.async_data_stream",
    "DataStreamUtils": "barrierflow.api.datastream_utils",
    **{
        name: "barrierflow.datastream.functions.async_io"
        for name in ("AsyncFunction", "AsyncRetryPredicate", "AsyncRetryStrategy")
    },
    "MemorySize": "barrierflow.api.slot_sharing_group",
    "SlotSharingGroup": "barrierflow.api.slot_sharing_group",
    **{
        name: "barrierflow.api.checkpoint_storage"
        for name in (
            "CheckpointStorage",
            "FileSystemCheckpointStorage",
            "JobManagerCheckpointStorage",
        )
    },
    **{
        name: "barrierflow.datastream.state_backend"
        for name in (
            "EmbeddedRocksDBStateBackend",
            "HashMapStateBackend",
            "PredefinedOptions",
            "StateBackend",
        )
    },
    **{
        name: "barrierflow.windowing.windows"
        for name in ("CountWindow", "GlobalWindow", "TimeWindow", "Window")
    },
    "Trigger": "barrierflow.windowing.window_triggers",
    "TriggerResult": "barrierflow.windowing.window_triggers",
    "WindowAssigner": "barrierflow.windowing.window_assigners",
    "MergingWindowAssigner": "barrierflow.windowing.window_assigners",
    **{
        name: "barrierflow.datastream.functions.one_input"
        for name in (
            "AggregateFunction",
            "FilterFunction",
            "FlatMapFunction",
            "KeyedProcessFunction",
            "KeySelector",
            "MapFunction",
            "ProcessFunction",
            "ProcessWindowFunction",
            "ReduceFunction",
            "RuntimeContext",
            "TimerService",
            "WindowFunction",
            "Partitioner",
            "SinkFunction",
            "SourceFunction",
        )
    },
    **{
        name: "barrierflow.datastream.functions.two_input"
        for name in (
            "BroadcastProcessFunction",
            "CoFlatMapFunction",
            "CoMapFunction",
            "CoProcessFunction",
            "KeyedBroadcastProcessFunction",
            "KeyedCoProcessFunction",
        )
    },
}

_NAMES = LazyNames(__name__, _EXPORTS)
_MOVED = MovedNames(
    __name__,
    {
        n: f"barrierflow.datastream.functions.{n}"
        for n in ("AllWindowFunction", "ProcessAllWindowFunction")
    },
)

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return _MOVED.get(name)
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())
