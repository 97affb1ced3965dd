"""A timer service that fails while firing (the state its timers live in, RocksDB on a full
disk, say) fails the operator with its own error: neither blamed on the function's
``on_timer`` or the window's trigger, whose failures name their timer, nor hidden behind an
error of the error handling (which once read the timer of a firing that had none yet)."""

from __future__ import annotations

from typing import Any

import pytest

from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.operators.stream_operator import UserFunctionError
from barrierflow.testing.harness import OperatorHarness, operator
from barrierflow.windowing.window_assigners import EventTimeSessionWindows
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import default_trigger


class FireAt(KeyedProcessFunction):
    """Sets an event-time timer at each record's value and emits the time when it fires;
    fails on the timer at 13."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value)

    def on_timer(self, timestamp, ctx):
        if timestamp == 13:
            raise ValueError("unlucky")
        yield timestamp


class _FailingRemovals:
    """The timers' state, whose removals fail after ``ok`` of them."""

    def __init__(self, state: Any, ok: int) -> None:
        self._state, self._ok = state, ok

    def remove(self, key: Any) -> None:
        if self._ok == 0:
            raise OSError("No space left on device")
        self._ok -= 1
        self._state.remove(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state, name)


def _break_timer_state(h: OperatorHarness, ok: int) -> None:
    timers = h.operator.timers
    timers._state = _FailingRemovals(timers._state, ok)


def _process_operator() -> OperatorHarness:
    return OperatorHarness(
        operator(TransformationKind.PROCESS, FireAt(), uid="fire", key_selector=lambda v: v % 2)
    )


@pytest.mark.parametrize("ok", [0, 1])
def test_a_failing_timer_service_fails_a_process_function_with_its_own_error(ok):
    h = _process_operator()
    h.process_timed([5, 6, 7], [5, 6, 7])
    _break_timer_state(h, ok)
    with pytest.raises(OSError, match="No space left"):
        h.watermark(10)
    h.close()


def test_a_failing_on_timer_names_its_timer():
    h = _process_operator()
    h.process_timed([12, 13], [12, 13])
    with pytest.raises(UserFunctionError, match=r"on_timer\(13\).*ValueError: unlucky"):
        h.watermark(20)
    h.close()


@pytest.mark.parametrize("ok", [0, 1])
def test_a_failing_timer_service_fails_a_window_with_its_own_error(ok):
    sessions = EventTimeSessionWindows.with_gap(10)
    spec = WindowSpec(sessions, default_trigger(sessions), Contents.REDUCE, lambda a, b: a + b)
    h = OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=lambda r: r[0]))
    h.process_timed([("a", 1), ("b", 2)], [0, 1])
    _break_timer_state(h, ok)
    with pytest.raises(OSError, match="No space left"):
        h.watermark(100)
    h.close()
