"""``connect``: two streams into one operator with a method per input (ConnectedStreams), or a
stream and a broadcast stream with broadcast state (BroadcastConnectedStream).

Each input is tagged by a map chained to it, ``(0, record)`` or ``(1, record)``, and the two
are unioned into the operator, which calls the method of the record's input; so a two-input
operator is a one-input operator of the runtime, and its checkpoints, barrier alignment and
watermarks (the minimum over both inputs) are those of a union. When keyed, each input keeps
its own key selector. Nothing runs here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from barrierflow.errors import ConfigurationError
from barrierflow.graph.transformation import (
    PartitionerSpec,
    Partitioning,
    Transformation,
    TransformationKind,
)
from barrierflow.runtime.broadcast_process import BroadcastProcess
from barrierflow.state.descriptors import MapStateDescriptor
from barrierflow.two_input_functions import Delegating
from barrierflow.typeinfo import checked_type

if TYPE_CHECKING:
    from barrierflow.api.datastream import DataStream


class _Tag:
    """The map chained to each input: which input a record came from."""

    def __init__(self, side: int) -> None:
        self.side = side

    def __call__(self, record: Any) -> tuple[int, Any]:
        return (self.side, record)


class _TaggedKey:
    """The key of a tagged record, by its input's key selector (None: the broadcast input,
    which has no key)."""

    def __init__(self, first: Any, second: Any) -> None:
        self.selectors = (first, second)

    def __call__(self, tagged: tuple[int, Any]) -> Any:
        select = self.selectors[tagged[0]]
        return None if select is None else select(tagged[1])


def _unkeyed(stream: DataStream) -> tuple[Transformation, Any]:
    """The transformation feeding ``stream`` and its key selector: a keyed input is tagged
    before its key_by, which the connected operator then applies (one shuffle, not two)."""
    key_selector = getattr(stream, "_key_selector", None)  # a KeyedStream's
    if key_selector is not None:
        return stream.get_transformation().inputs[0], key_selector
    return stream.get_transformation(), None


def _tagged(t: Transformation, side: int, env: Any, partitioner: PartitionerSpec | None) -> Any:
    tag = Transformation(
        TransformationKind.MAP,
        f"Connect(input {side + 1})",
        [t],
        _Tag(side),
        parallelism=t.parallelism if not t.is_virtual else None,
    )
    env._add(tag)
    if partitioner is None:
        return tag
    return Transformation(TransformationKind.PARTITION, "KeyBy", [tag], partitioner=partitioner)


def _selector(fn: Any, what: str) -> Any:
    select = getattr(fn, "get_key", fn)
    if not callable(select):
        raise ConfigurationError(f"{what} needs a key selector function, got {fn!r}")
    return select


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
        key_selector = _TaggedKey(*self._keys) if self._keys is not None else None
        partitioner = (
            PartitionerSpec(Partitioning.KEY_GROUPS, key_selector) if key_selector else None
        )
        inputs = [
            _tagged(t, side, self._env, partitioner) for side, (t, _) in enumerate(self._inputs)
        ]
        union = Transformation(TransformationKind.UNION, "Connect", inputs)
        t = Transformation(
            TransformationKind.PROCESS,
            name,
            [union],
            adapter,
            key_selector=key_selector,
            output_type=checked_type(output_type, f"{name}()"),
        )
        self._env._add(t)
        return self.stream1._derived(t)

    def map(self, func: Any, output_type: Any = None) -> DataStream:
        _require(func, ("map1", "map2"), "map()", "a CoMapFunction")
        return self._process(_CoMap(func), type(func).__name__, output_type)

    def flat_map(self, func: Any, output_type: Any = None) -> DataStream:
        _require(func, ("flat_map1", "flat_map2"), "flat_map()", "a CoFlatMapFunction")
        return self._process(_CoFlatMap(func), type(func).__name__, output_type)

    def process(self, func: Any, output_type: Any = None) -> DataStream:
        _require(
            func,
            ("process_element1", "process_element2"),
            "process()",
            "a CoProcessFunction or KeyedCoProcessFunction",
        )
        return self._process(_CoProcess(func), type(func).__name__, output_type)


def _require(func: Any, methods: tuple[str, ...], what: str, expected: str) -> None:
    missing = [m for m in methods if not callable(getattr(func, m, None))]
    if missing:
        raise ConfigurationError(f"{what} needs {expected}; {func!r} has no {missing[0]}()")


class _CoMap(Delegating):
    def process_element(self, tagged: tuple[int, Any], ctx: Any) -> list[Any]:
        side, value = tagged
        return [self._fn.map2(value) if side else self._fn.map1(value)]


class _CoFlatMap(Delegating):
    def process_element(self, tagged: tuple[int, Any], ctx: Any) -> Iterable[Any] | None:
        side, value = tagged
        return self._fn.flat_map2(value) if side else self._fn.flat_map1(value)


class _CoProcess(Delegating):
    def process_element(self, tagged: tuple[int, Any], ctx: Any) -> Iterable[Any] | None:
        side, value = tagged
        if side:
            return self._fn.process_element2(value, ctx)
        return self._fn.process_element1(value, ctx)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        on_timer = getattr(self._fn, "on_timer", None)
        return on_timer(timestamp, ctx) if on_timer is not None else None


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
        main_partitioner = None
        if key_selector is not None:
            main_partitioner = PartitionerSpec(
                Partitioning.KEY_GROUPS, _TaggedKey(key_selector, None)
            )
        inputs = [
            _tagged(t, 0, env, main_partitioner),
            _tagged(
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
            [Transformation(TransformationKind.UNION, "Connect", inputs)],
            BroadcastProcess(func, names),
            key_selector=_TaggedKey(key_selector, None) if key_selector is not None else None,
            output_type=checked_type(output_type, "process()"),
        )
        env._add(t)
        return self._stream._derived(t)
