"""PyFlink's ``pyflink.datastream``, at the same path: a PyFlink DataStream program changes only
its imports. Each name is defined once in barrierflow's own modules and re-exported here, lazily
(module ``__getattr__``), so that an executor unpickling a user function of
``barrierflow.datastream.functions`` loads neither the API nor the JobMaster."""

from __future__ import annotations

import importlib

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
    "AsyncDataStream": "barrierflow.api.async_data_stream",
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
    "Trigger": "barrierflow.windowing.triggers",
    "TriggerResult": "barrierflow.windowing.triggers",
    "WindowAssigner": "barrierflow.windowing.assigners",
    "MergingWindowAssigner": "barrierflow.windowing.assigners",
    **{
        name: "barrierflow.datastream.functions.one_input"
        for name in (
            "AggregateFunction",
            "AllWindowFunction",
            "FilterFunction",
            "FlatMapFunction",
            "KeyedProcessFunction",
            "KeySelector",
            "MapFunction",
            "ProcessAllWindowFunction",
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

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'barrierflow.datastream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
