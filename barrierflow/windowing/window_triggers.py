"""Triggers decide when a window's contents are emitted (FIRE) and when they are dropped
(PURGE), as in PyFlink: ``on_element`` for each record, ``on_event_time`` /
``on_processing_time`` when a timer the trigger registered fires. Every assigner has a default
(``default_trigger``); ``WindowedStream.trigger`` replaces it. Evictors remove elements from a
window before its function sees them (``count_window(size, slide)`` keeps the last ``size``).

A trigger keeps what it needs in per-window state through its context
(``get_partitioned_state``), so that it is checkpointed and restored with the window. Performs
no I/O.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

from barrierflow.eventtime.durations import Time, millis_of
from barrierflow.state.descriptors import ValueStateDescriptor
from barrierflow.windowing.windows import GlobalWindow, TimeWindow, Window

if TYPE_CHECKING:
    from barrierflow.windowing.window_assigners import WindowAssigner

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(enum.Enum):
    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


class TriggerContext(Protocol):
    def get_current_processing_time(self) -> int: ...
    def get_current_watermark(self) -> int: ...
    def register_processing_time_timer(self, time: int) -> None: ...
    def register_event_time_timer(self, time: int) -> None: ...
    def delete_processing_time_timer(self, time: int) -> None: ...
    def delete_event_time_timer(self, time: int) -> None: ...
    def get_partitioned_state(self, state_descriptor: ValueStateDescriptor) -> Any: ...


class OnMergeContext(TriggerContext, Protocol):
    def merge_partitioned_state(self, state_descriptor: ValueStateDescriptor) -> None: ...


class Trigger(Generic[T, W]):
    """Subclass it (``class MyTrigger(Trigger[tuple, TimeWindow])``) and pass it to
    ``WindowedStream.trigger``. Its per-window state comes from ``ctx.get_partitioned_state``
    with a ``ValueStateDescriptor``."""

    TriggerContext: TypeAlias = TriggerContext
    OnMergeContext: TypeAlias = OnMergeContext

    def on_element(
        self, element: Any, timestamp: int, window: Any, ctx: TriggerContext
    ) -> TriggerResult:
        raise NotImplementedError

    def on_processing_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Any, ctx: TriggerContext) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not support merging windows")

    def clear(self, window: Any, ctx: TriggerContext) -> None:
        pass


class EventTimeTrigger(Trigger[Any, TimeWindow]):
    """Fires once the watermark passes the window's end; a late record that is still within
    the allowed lateness fires it again at once."""

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: TriggerContext) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger[Any, TimeWindow]):
    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.FIRE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window: TimeWindow, ctx: TriggerContext) -> None:
        ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())


class NeverTrigger(Trigger[Any, GlobalWindow]):
    """The default of ``GlobalWindows``: only a trigger of your own fires them."""

    def on_element(
        self, element: Any, timestamp: int, window: GlobalWindow, ctx: TriggerContext
    ) -> TriggerResult:
        return TriggerResult.CONTINUE


class _Continuous(Trigger[Any, TimeWindow]):
    """Fires every ``interval`` ms of its clock while a window is open, at multiples of the
    interval (the first one after the window's first record), and at the window's end.

    Its next firing time is per-window state. It does not merge windows (``can_merge`` is
    False: the window operator has no merging of a trigger's state yet), so a session window
    with it is refused when the job starts."""

    def __init__(self, interval: int) -> None:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
            raise ValueError(f"{type(self).__name__} needs a positive interval, not {interval!r}")
        self.interval = interval
        self._descriptor = ValueStateDescriptor("fire-time")

    def _now(self, timestamp: int, ctx: TriggerContext) -> int:
        raise NotImplementedError

    def _register(self, time: int, ctx: TriggerContext) -> None:
        raise NotImplementedError

    def _delete(self, time: int, ctx: TriggerContext) -> None:
        raise NotImplementedError

    def _schedule_after(self, time: int, window: Any, ctx: TriggerContext) -> None:
        next_fire = min(time + self.interval, window.max_timestamp())
        ctx.get_partitioned_state(self._descriptor).update(next_fire)
        self._register(next_fire, ctx)

    def _first_element(self, timestamp: int, window: Any, ctx: TriggerContext) -> None:
        if ctx.get_partitioned_state(self._descriptor).value() is None:
            now = self._now(timestamp, ctx)
            self._schedule_after(now - now % self.interval, window, ctx)

    def _on_timer(self, time: int, window: Any, ctx: TriggerContext) -> TriggerResult:
        state = ctx.get_partitioned_state(self._descriptor)
        if state.value() == time:
            state.clear()
            self._schedule_after(time, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def clear(self, window: TimeWindow, ctx: TriggerContext) -> None:
        state = ctx.get_partitioned_state(self._descriptor)
        fire_time = state.value()
        if fire_time is not None:
            self._delete(fire_time, ctx)
            state.clear()


class ContinuousEventTimeTrigger(_Continuous):
    """Fires every ``interval`` of event time (as the watermark passes) and when the watermark
    passes the window's end."""

    @staticmethod
    def of(interval: Time | int) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(millis_of(interval, "ContinuousEventTimeTrigger.of"))

    def _now(self, timestamp: int, ctx: TriggerContext) -> int:
        return timestamp

    def _register(self, time: int, ctx: TriggerContext) -> None:
        ctx.register_event_time_timer(time)

    def _delete(self, time: int, ctx: TriggerContext) -> None:
        ctx.delete_event_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE  # the window is complete already
        ctx.register_event_time_timer(window.max_timestamp())
        self._first_element(timestamp, window, ctx)
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow, ctx: TriggerContext) -> TriggerResult:
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return self._on_timer(time, window, ctx)


class ContinuousProcessingTimeTrigger(_Continuous):
    """Fires every ``interval`` of the wall clock while the window is open."""

    @staticmethod
    def of(interval: Time | int) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(
            millis_of(interval, "ContinuousProcessingTimeTrigger.of")
        )

    def _now(self, timestamp: int, ctx: TriggerContext) -> int:
        return ctx.get_current_processing_time()

    def _register(self, time: int, ctx: TriggerContext) -> None:
        ctx.register_processing_time_timer(time)

    def _delete(self, time: int, ctx: TriggerContext) -> None:
        ctx.delete_processing_time_timer(time)

    def on_element(
        self, element: Any, timestamp: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        self._first_element(timestamp, window, ctx)
        return TriggerResult.CONTINUE

    def on_processing_time(
        self, time: int, window: TimeWindow, ctx: TriggerContext
    ) -> TriggerResult:
        return self._on_timer(time, window, ctx)


class CountTrigger(Trigger[Any, Any]):
    """Fires each time the window, of any kind, has received ``count`` more elements."""

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"CountTrigger needs a positive count, not {count!r}")
        self.count = count
        self._descriptor = ValueStateDescriptor("count")

    @staticmethod
    def of(count: int) -> CountTrigger:
        return CountTrigger(count)

    def on_element(
        self, element: Any, timestamp: int, window: Window, ctx: TriggerContext
    ) -> TriggerResult:
        state = ctx.get_partitioned_state(self._descriptor)
        seen = (state.value() or 0) + 1
        if seen >= self.count:
            state.clear()
            return TriggerResult.FIRE
        state.update(seen)
        return TriggerResult.CONTINUE

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        ctx.get_partitioned_state(self._descriptor).clear()


class PurgingTrigger(Trigger[T, W]):
    """Turns every FIRE of ``nested`` into FIRE_AND_PURGE."""

    def __init__(self, nested: Trigger[T, W]) -> None:
        self.nested = nested

    @staticmethod
    def of(nested: Trigger[T, W]) -> PurgingTrigger[T, W]:
        return PurgingTrigger(nested)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(
        self, element: Any, timestamp: int, window: W, ctx: TriggerContext
    ) -> TriggerResult:
        return self._purging(self.nested.on_element(element, timestamp, window, ctx))

    def on_processing_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested.on_processing_time(time, window, ctx))

    def on_event_time(self, time: int, window: W, ctx: TriggerContext) -> TriggerResult:
        return self._purging(self.nested.on_event_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested.can_merge()

    def on_merge(self, window: W, ctx: TriggerContext) -> None:
        self.nested.on_merge(window, ctx)

    def clear(self, window: W, ctx: TriggerContext) -> None:
        self.nested.clear(window, ctx)


class CountEvictor:
    """Keeps the last ``max_count`` elements of a window when it fires."""

    def __init__(self, max_count: int) -> None:
        if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 1:
            raise ValueError(f"CountEvictor needs a positive count, not {max_count!r}")
        self.max_count = max_count

    @staticmethod
    def of(max_count: int) -> CountEvictor:
        return CountEvictor(max_count)

    def evict(self, elements: list[Any]) -> list[Any]:
        return elements[-self.max_count :]


def default_trigger(assigner: WindowAssigner[Any, Any]) -> Trigger[Any, Any]:
    """The trigger of a windowed stream not given one: its assigner's."""
    return assigner.get_default_trigger(None)
