"""PyFlink's continuous triggers fire every interval of their clock while a window is open,
at multiples of the interval, and (event time) at the window's end."""

from __future__ import annotations

import pytest

from barrierflow.common import Time
from barrierflow.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    TimeWindow,
    TriggerResult,
)


class FakeContext:
    """A trigger context of one window: its timers and per-window state."""

    def __init__(self, watermark: int = -(2**63), now: int = 0) -> None:
        self.watermark, self.now = watermark, now
        self.event_timers: set[int] = set()
        self.processing_timers: set[int] = set()
        self.state: dict[str, object] = {}

    def get_current_watermark(self) -> int:
        return self.watermark

    def get_current_processing_time(self) -> int:
        return self.now

    def register_event_time_timer(self, time: int) -> None:
        self.event_timers.add(time)

    def delete_event_time_timer(self, time: int) -> None:
        self.event_timers.discard(time)

    def register_processing_time_timer(self, time: int) -> None:
        self.processing_timers.add(time)

    def delete_processing_time_timer(self, time: int) -> None:
        self.processing_timers.discard(time)

    def get_partitioned_state(self, descriptor):
        ctx = self

        class Value:
            def value(self):
                return ctx.state.get(descriptor.name)

            def update(self, value):
                ctx.state[descriptor.name] = value

            def clear(self):
                ctx.state.pop(descriptor.name, None)

        return Value()


def test_event_time_fires_at_each_interval_and_at_the_windows_end():
    trigger = ContinuousEventTimeTrigger.of(Time.milliseconds(10))
    window, ctx = TimeWindow(0, 35), FakeContext()
    assert trigger.on_element("a", 3, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == {10, 34}
    assert trigger.on_event_time(10, window, ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(20, window, ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(30, window, ctx) is TriggerResult.FIRE
    assert ctx.state == {"fire-time": 34}  # the next firing is capped at the window's end
    assert trigger.on_event_time(34, window, ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(17, window, ctx) is TriggerResult.CONTINUE
    trigger.clear(window, ctx)
    assert ctx.state == {} and 34 not in ctx.event_timers


def test_event_time_fires_at_once_for_a_window_the_watermark_passed():
    trigger = ContinuousEventTimeTrigger.of(10)
    assert trigger.on_element("late", 3, TimeWindow(0, 5), FakeContext(watermark=9)) is (
        TriggerResult.FIRE
    )


def test_processing_time_fires_at_multiples_of_the_interval_of_the_wall_clock():
    trigger = ContinuousProcessingTimeTrigger.of(Time.seconds(1))
    window, ctx = TimeWindow(0, 10_000), FakeContext(now=2_345)
    assert trigger.on_element("a", 0, window, ctx) is TriggerResult.CONTINUE
    assert trigger.on_element("b", 0, window, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_timers == {3_000}
    assert trigger.on_processing_time(3_000, window, ctx) is TriggerResult.FIRE
    assert ctx.processing_timers == {3_000, 4_000}


def test_continuous_triggers_do_not_merge_and_refuse_a_bad_interval():
    assert not ContinuousEventTimeTrigger.of(5).can_merge()
    with pytest.raises(ValueError, match="positive interval"):
        ContinuousProcessingTimeTrigger(0)
