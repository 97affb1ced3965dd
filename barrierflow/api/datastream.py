"""DataStream and KeyedStream: the PyFlink-style fluent API that records transformations.

Nothing runs here: each call adds a ``Transformation``; ``env.execute()`` translates them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from barrierflow.errors import ConfigurationError
from barrierflow.functions import (
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    MapFunction,
)
from barrierflow.graph.transformation import (
    PartitionerSpec,
    Partitioning,
    Transformation,
    TransformationKind,
)

if TYPE_CHECKING:
    from barrierflow.api.environment import StreamExecutionEnvironment


def _check_callable(fn: Any, method: str, what: str) -> Callable[[Any], Any]:
    if hasattr(fn, method) and callable(getattr(fn, method)):
        return fn
    if callable(fn):
        return fn
    raise ConfigurationError(f"{what} needs a function or an object with {method}(), got {fn!r}")


class DataStream:
    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._transformation = transformation

    def get_transformation(self) -> Transformation:
        return self._transformation

    def _then(self, kind: TransformationKind, name: str, function: Any = None, **kw) -> DataStream:
        t = Transformation(kind, name, [self._transformation], function, **kw)
        self._env._add(t)
        return DataStream(self._env, t)

    # --- operators --------------------------------------------------------------------------

    def map(self, func: Callable[[Any], Any] | MapFunction) -> DataStream:
        return self._then(TransformationKind.MAP, "Map", _check_callable(func, "map", "map()"))

    def flat_map(self, func: Callable[[Any], Any] | FlatMapFunction) -> DataStream:
        fn = _check_callable(func, "flat_map", "flat_map()")
        return self._then(TransformationKind.FLAT_MAP, "FlatMap", fn)

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        fn = _check_callable(func, "filter", "filter()")
        return self._then(TransformationKind.FILTER, "Filter", fn)

    def key_by(self, key_selector: Callable[[Any], Any]) -> KeyedStream:
        if not callable(key_selector):
            raise ConfigurationError(f"key_by() needs a function, got {key_selector!r}")
        t = Transformation(
            TransformationKind.PARTITION,
            "KeyBy",
            [self._transformation],
            partitioner=PartitionerSpec(Partitioning.KEY_GROUPS, key_selector),
        )
        return KeyedStream(self._env, t, key_selector)

    def rebalance(self) -> DataStream:
        t = Transformation(
            TransformationKind.PARTITION,
            "Rebalance",
            [self._transformation],
            partitioner=PartitionerSpec(Partitioning.REBALANCE),
        )
        return DataStream(self._env, t)

    def union(self, *streams: DataStream) -> DataStream:
        for s in streams:
            if not isinstance(s, DataStream) or s._env is not self._env:
                raise ConfigurationError("union() takes DataStreams of the same environment")
        t = Transformation(
            TransformationKind.UNION,
            "Union",
            [self._transformation, *(s._transformation for s in streams)],
        )
        return DataStream(self._env, t)

    def sink_to(self, sink: Any) -> DataStreamSink:
        if not hasattr(sink, "create_writer"):
            raise ConfigurationError(
                f"sink_to() needs a sink such as FileSink(directory), got {sink!r}"
            )
        t = Transformation(
            TransformationKind.SINK, type(sink).__name__, [self._transformation], sink
        )
        self._env._add(t)
        return DataStreamSink(self._env, t)

    # --- properties of the last operator ----------------------------------------------------

    def _operator(self, what: str) -> Transformation:
        t = self._transformation
        if t.is_virtual:
            raise ConfigurationError(
                f"{what}() applies to an operator, not to {t.name.lower()}(): call it after "
                "map/process/sink_to"
            )
        return t

    def uid(self, uid: str) -> DataStream:
        if not isinstance(uid, str) or not uid:
            raise ConfigurationError(f"uid must be a non-empty string, got {uid!r}")
        self._operator("uid").uid = uid
        return self

    def name(self, name: str) -> DataStream:
        self._operator("name").name = str(name)
        return self

    def set_parallelism(self, parallelism: int) -> DataStream:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigurationError(f"parallelism must be a positive integer, got {parallelism!r}")
        self._operator("set_parallelism").parallelism = parallelism
        return self


class KeyedStream(DataStream):
    def __init__(self, env, transformation: Transformation, key_selector) -> None:
        super().__init__(env, transformation)
        self._key_selector = key_selector

    def process(self, func: KeyedProcessFunction) -> DataStream:
        if not (hasattr(func, "process_element") and callable(func.process_element)):
            raise ConfigurationError(f"process() needs a KeyedProcessFunction, got {func!r}")
        return self._then(
            TransformationKind.PROCESS, type(func).__name__, func, key_selector=self._key_selector
        )


class DataStreamSink(DataStream):
    """Returned by ``sink_to``: only ``uid``, ``name`` and ``set_parallelism`` apply."""
