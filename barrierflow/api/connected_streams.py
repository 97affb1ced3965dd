"""``connect``: two streams into one operator with a method per input (ConnectedStreams), or a
stream and a broadcast stream with broadcast state (BroadcastConnectedStream).

The operator has two inputs (``TransformationKind.CO_PROCESS`` or ``BROADCAST_PROCESS``): the
graph keeps which edge feeds which, and the task hands each input's batches to its own method,
so barrier alignment spans both inputs and the operator's watermark is the minimum of the
two inputs' (Flink's rule). When keyed, each input keeps its own key selector and is
partitioned by it. Nothing runs here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.common.typeinfo import checked_type
from barrierflow.datastream.functions.two_input import (
    BroadcastProcess,
    CoFlatMapProcess,
    CoMapProcess,
    CoProcess,
)
from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import (
    PartitionerSpec,
    Partitioning,
    Transformation,
    TransformationKind,
)
from barrierflow.state.descriptors import MapStateDescriptor
from barrierflow.state.key_groups import hashable_keys

if TYPE_CHECKING:
    from barrierflow.api.datastream import DataStream


def _unkeyed(stream: DataStream) -> tuple[Transformation, Any]:
    """The transformation feeding ``stream`` and its key selector: a keyed input is
    partitioned by the key selector the connected operator is given (one shuffle, not two)."""
    key_selector = getattr(stream, "_key_selector", None)  # a KeyedStream's
    if key_selector is not None:
        return stream.get_transformation().inputs[0], key_selector
    return stream.get_transformation(), None


def _input(
    upstream: Transformation, side: int, env: Any, partitioner: PartitionerSpec | None
) -> Any:
    """Input ``side`` of a two-input operator: ``upstream`` through ``partitioner`` (None:
    forward where the parallelism allows, else rebalance).

    It is recorded in the program's transformations where the map that tagged each input
    stood when connect unioned its inputs, so that the positions which name the operators
    declared after it without a uid, and with them the state of savepoints taken then, stay
    the same."""
    connect_input = Transformation(
        TransformationKind.PARTITION,
        f"Connect(input {side + 1})",
        [upstream],
        partitioner=partitioner,
    )
    env._add(connect_input)
    return connect_input


def _selector(fn: Any, what: str) -> Any:
    select = getattr(fn, "get_key", fn)
    if not callable(select):
        raise ConfigurationError(f"{what} needs a key selector function, got {fn!r}")
    return hashable_keys(select)


class ConnectedStreams:
    """Two streams whose records reach one function: ``map(CoMapFunction)``,
    ``flat_map(CoFlatMapFunction)``, ``process(CoProcessFunction)``; after ``key_by``,
    ``process(KeyedCoProcessFunction)`` with the key's state and timers."""

    def __init__(
        self, first: DataStream, second: DataStream, keys: tuple[Any, Any] | None = None
    ) -> None:
        if getattr(second, "_env", None) is not first._env:
            raise ConfigurationError("connect() takes a DataStream of the same environment")
        self.stream1, self.stream2 = first, second
        self._env = first._env
        self._inputs = (_unkeyed(first), _unkeyed(second))
        if keys is None and all(k is not None for _, k in self._inputs):
            keys = (self._inputs[0][1], self._inputs[1][1])  # two keyed streams connected
        self._keys = keys

    def key_by(self, key_selector1: Any, key_selector2: Any, key_type: Any = None) -> Any:
        keys = (
            _selector(key_selector1, "key_by()"),
            _selector(key_selector2, "key_by()"),
        )
        return ConnectedStreams(self.stream1, self.stream2, keys)

    def _process(self, adapter: Any, name: str, output_type: Any) -> DataStream:
        keys = self._keys or (None, None)
        inputs = [
            _input(t, side, self._env, _by_key(key))
            for side, ((t, _), key) in enumerate(zip(self._inputs, keys, strict=True))
        ]
        t = Transformation(
            TransformationKind.CO_PROCESS,
            name,
            inputs,
            adapter,
            key_selector=keys[0],
            key_selector2=keys[1],
            output_type=checked_type(output_type, f"{name}()"),
        )
        self._env._add(t)
        return self.stream1._derived(t)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        _require(func, ("map1", "map2"), "map()", "a CoMapFunction")
        return self._process(CoMapProcess(func), type(func).__name__, output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        _require(func, ("flat_map1", "flat_map2"), "flat_map()", "a CoFlatMapFunction")
        return self._process(CoFlatMapProcess(func), type(func).__name__, output_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        _require(
            func,
            ("process_element1", "process_element2"),
            "process()",
            "a CoProcessFunction or KeyedCoProcessFunction",
        )
        return self._process(CoProcess(func), type(func).__name__, output_type)


def _require(func: Any, methods: tuple[str, ...], what: str, expected: str) -> None:
    missing = [m for m in methods if not callable(getattr(func, m, None))]
    if missing:
        raise ConfigurationError(f"{what} needs {expected}; {func!r} has no {missing[0]}()")


def _by_key(key_selector: Any) -> PartitionerSpec | None:
    return None if key_selector is None else PartitionerSpec(Partitioning.KEY_GROUPS, key_selector)


class BroadcastStream:
    """``stream.broadcast(MapStateDescriptor(...), ...)``: every record to every subtask of
    the operator it is connected to, where it may change the declared broadcast states."""

    def __init__(self, stream: DataStream, descriptors: tuple[Any, ...]) -> None:
        for d in descriptors:
            if not isinstance(d, MapStateDescriptor):
                raise ConfigurationError(
                    f"broadcast() takes MapStateDescriptors (the broadcast states), got {d!r}"
                )
        names = [d.name for d in descriptors]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"broadcast(): a broadcast state name is repeated: {names}")
        self.stream = stream
        self.descriptors = descriptors


class BroadcastConnectedStream:
    """A stream connected to a broadcast stream: ``process(BroadcastProcessFunction)``, or,
    when the stream is keyed, ``process(KeyedBroadcastProcessFunction)``."""

    def __init__(self, stream: DataStream, broadcast: BroadcastStream) -> None:
        if broadcast.stream._env is not stream._env:
            raise ConfigurationError("connect() takes a BroadcastStream of the same environment")
        self._stream = stream
        self._broadcast = broadcast

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        _require(
            func,
            ("process_element", "process_broadcast_element"),
            "process()",
            "a BroadcastProcessFunction or KeyedBroadcastProcessFunction",
        )
        env = self._stream._env
        t, key_selector = _unkeyed(self._stream)
        inputs = [
            _input(t, 0, env, _by_key(key_selector)),
            _input(
                self._broadcast.stream.get_transformation(),
                1,
                env,
                PartitionerSpec(Partitioning.BROADCAST),
            ),
        ]
        names = tuple(d.name for d in self._broadcast.descriptors)
        t = Transformation(
            TransformationKind.BROADCAST_PROCESS,
            type(func).__name__,
            inputs,
            BroadcastProcess(func, names),
            key_selector=key_selector,
            output_type=checked_type(output_type, "process()"),
        )
        env._add(t)
        return self._stream._derived(t)
