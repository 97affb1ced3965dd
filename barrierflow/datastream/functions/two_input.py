"""User functions of two inputs, PyFlink-style: ``connect`` two streams and give one function
a method per input; or connect a stream to a broadcast stream, whose records every subtask
sees and keeps in broadcast state.

The two inputs share the operator (and, when keyed, its state and timers): the function
correlates them, which is what connect is for. Records of the two inputs interleave in the
order they arrive; there is no order between the inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from barrierflow.datastream.functions.one_input import (
    KEY,
    OUT,
    Function,
    KeyedProcessFunction,
    ProcessFunction,
)

IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")


class Delegating(KeyedProcessFunction):
    """Runs a user's function in a runtime operator (the two-input adapters below subclass
    it): ``open`` and ``close`` reach the function."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def open(self, runtime_context: Any) -> None:
        if callable(getattr(self._fn, "open", None)):
            self._fn.open(runtime_context)

    def close(self) -> None:
        if callable(getattr(self._fn, "close", None)):
            self._fn.close()


# What the two-input operators call: ``process_element1`` on the records of input 1,
# ``process_element2`` on those of input 2 (each returns its outputs, or None), ``on_timer``.
# One adapter per kind of user function, so that an operator has one loop per input.


class CoMapProcess(Delegating):
    """A CoMapFunction: one output per record."""

    def per_record_methods(self) -> tuple[Callable[..., Any], ...]:
        """The user's methods that get a record's context: none."""
        return ()

    def process_element1(self, value: Any, ctx: Any) -> tuple[Any]:
        return (self._fn.map1(value),)

    def process_element2(self, value: Any, ctx: Any) -> tuple[Any]:
        return (self._fn.map2(value),)


class CoFlatMapProcess(Delegating):
    """A CoFlatMapFunction."""

    def per_record_methods(self) -> tuple[Callable[..., Any], ...]:
        return ()

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.flat_map1(value)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.flat_map2(value)


class CoProcess(Delegating):
    """A CoProcessFunction or KeyedCoProcessFunction (``on_timer`` where it has one)."""

    def per_record_methods(self) -> tuple[Callable[..., Any], ...]:
        """The user's methods that get a record's context (which may read its timestamp)."""
        return (self._fn.process_element1, self._fn.process_element2)

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.process_element1(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.process_element2(value, ctx)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        on_timer = getattr(self._fn, "on_timer", None)
        return on_timer(timestamp, ctx) if on_timer is not None else None


class BroadcastProcess(CoProcess):
    """A (Keyed)BroadcastProcessFunction and the broadcast states it declared (by name):
    input 1 is the stream, input 2 the broadcast stream."""

    def __init__(self, fn: Any, state_names: tuple[str, ...]) -> None:
        super().__init__(fn)
        self.state_names = state_names

    def per_record_methods(self) -> tuple[Callable[..., Any], ...]:
        return (self._fn.process_element, self._fn.process_broadcast_element)

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.process_element(value, ctx)

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._fn.process_broadcast_element(value, ctx)


class CoMapFunction(Function):
    def map1(self, value: Any) -> Any:
        raise NotImplementedError

    def map2(self, value: Any) -> Any:
        raise NotImplementedError


class CoFlatMapFunction(Function):
    def flat_map1(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError

    def flat_map2(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class CoProcessFunction(Function):
    """One method per input; ``ctx`` as a ProcessFunction's (timestamp, side outputs)."""

    Context = ProcessFunction.Context

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        raise NotImplementedError


class KeyedCoProcessFunction(Function):
    """One method per input of two keyed streams connected; state and timers are the current
    key's, whichever input the record came from."""

    Context = KeyedProcessFunction.Context
    OnTimerContext = KeyedProcessFunction.OnTimerContext

    def process_element1(self, value: Any, ctx: Any) -> Iterable[Any]:
        raise NotImplementedError

    def process_element2(self, value: Any, ctx: Any) -> Iterable[Any]:
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        pass


class BaseBroadcastProcessFunction(Function):
    """What both broadcast process functions are: ``process_element`` on the stream's records
    with the broadcast state read-only, ``process_broadcast_element`` on the broadcast
    stream's, which may change it. The contexts are PyFlink's: what a function's ``ctx`` has
    (for annotations; the runtime passes its own objects)."""

    class BaseContext(Protocol):
        def timestamp(self) -> int | None: ...
        def current_processing_time(self) -> int: ...
        def current_watermark(self) -> int: ...

    class Context(BaseContext, Protocol):
        """``process_broadcast_element``'s: the broadcast state, writable."""

        def get_broadcast_state(self, state_descriptor: Any) -> Any: ...

    class ReadOnlyContext(BaseContext, Protocol):
        """``process_element``'s: the broadcast state, read-only."""

        def get_broadcast_state(self, state_descriptor: Any) -> Any: ...

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any]:
        raise NotImplementedError

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        raise NotImplementedError


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """``process_element`` sees each record of the (not keyed) stream with the broadcast
    state read-only (``ctx.get_broadcast_state(descriptor)``); ``process_broadcast_element``
    sees each record of the broadcast stream, in every subtask, and may change it. Every
    subtask must change it alike, so that all hold the same state, as in Flink."""

    class Context(BaseBroadcastProcessFunction.Context, Protocol):
        def output(self, output_tag: Any, value: Any) -> None: ...

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, Protocol):
        def output(self, output_tag: Any, value: Any) -> None: ...


class KeyedBroadcastProcessFunction(BroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """A BroadcastProcessFunction on a keyed stream: ``process_element`` also has the key's
    state and timers, ``on_timer`` fires them."""

    class Context(BaseBroadcastProcessFunction.Context, Protocol):
        def output(self, output_tag: Any, value: Any) -> None: ...

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, Protocol):
        """``process_element``'s: also the key and its timers."""

        def output(self, output_tag: Any, value: Any) -> None: ...
        def timer_service(self) -> Any: ...
        def get_current_key(self) -> Any: ...

    class OnTimerContext(ReadOnlyContext, Protocol):
        def time_domain(self) -> Any: ...

    def on_timer(self, timestamp: int, ctx: Any) -> Iterable[Any] | None:
        pass
