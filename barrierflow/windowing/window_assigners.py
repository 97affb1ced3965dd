"""Window assigners, as PyFlink programs name them and subclass them: which windows a record
belongs to, by its event timestamp, the processing time it arrives at, or a count kept in the
key's state. Performs no I/O.

The protocol is PyFlink's: ``assign_windows(element, timestamp, context)`` (the context gives
the processing time and the runtime context, whose keyed state is the current key's),
``is_event_time()``, ``get_default_trigger(env)``, ``get_window_serializer()``; a
``MergingWindowAssigner`` also has ``merge_windows(windows, callback)``, which calls
``callback.merge(to_be_merged, merge_result)`` for each group of windows that become one.

Sizes, slides, gaps and offsets are a ``Time``, a ``Duration`` or milliseconds. A record whose
event timestamp is missing cannot be put into an event-time window: the error names it and says
to assign timestamps (``assign_timestamps_and_watermarks``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, Self, TypeVar, cast

from barrierflow.common.typeinfo import Types
from barrierflow.eventtime.durations import Duration, Time, millis_of
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.state.descriptors import ValueStateDescriptor
from barrierflow.windowing.serializers import (
    CountWindowSerializer,
    GlobalWindowSerializer,
    TimeWindowSerializer,
    TypeSerializer,
)
from barrierflow.windowing.window_triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)
from barrierflow.windowing.windows import CountWindow, GlobalWindow, TimeWindow, merge_time_windows

Length = Time | Duration | int
T = TypeVar("T")
W = TypeVar("W")
W2 = TypeVar("W2")


class AssignerContext:
    """What ``assign_windows`` gets (PyFlink's ``WindowAssigner.WindowAssignerContext``): the
    processing time the record arrived at, and the window operator's runtime context."""

    __slots__ = ("processing_time_ms", "runtime_context")

    def __init__(self, processing_time_ms: int = 0, runtime_context: Any = None) -> None:
        self.processing_time_ms = processing_time_ms
        self.runtime_context = runtime_context

    def get_current_processing_time(self) -> int:
        return self.processing_time_ms

    def get_runtime_context(self) -> Any:
        if self.runtime_context is None:
            raise RuntimeError(
                "this WindowAssignerContext has no runtime context: the assigner is called "
                "outside a window operator; give AssignerContext a runtime context"
            )
        return self.runtime_context


class WindowAssigner(Generic[T, W]):
    """Subclass it with ``assign_windows`` (the windows of a record), ``is_event_time`` and
    ``get_default_trigger``, as in PyFlink."""

    WindowAssignerContext = AssignerContext

    def assign_windows(self, element: Any, timestamp: int, context: AssignerContext) -> list[W]:
        raise NotImplementedError

    def get_default_trigger(self, env: Any = None) -> Trigger[T, W]:
        raise NotImplementedError(
            f"{type(self).__name__} must define get_default_trigger(self, env), or the "
            "windowed stream must be given a trigger (.trigger(...))"
        )

    def get_window_serializer(self) -> TypeSerializer[W]:
        raise NotImplementedError(
            f"{type(self).__name__} does not say how its windows are serialized "
            "(get_window_serializer); barrierflow keeps windows without one"
        )

    def is_event_time(self) -> bool:
        return True

    def _check_timestamp(self, element: Any, timestamp: int) -> None:
        if timestamp == NO_TIMESTAMP:
            raise ValueError(
                f"{type(self).__name__} needs an event timestamp, but record {element!r:.200} "
                "has none: call assign_timestamps_and_watermarks(...) on the stream, or give "
                "the source a WatermarkStrategy with a timestamp assigner"
            )


def _positive(value: Length, what: str) -> int:
    millis = millis_of(value, what)
    if millis <= 0:
        raise ValueError(f"{what} must be positive, not {millis} ms")
    return millis


def _offset(value: Length, size: int, what: str) -> int:
    millis = millis_of(value, what)
    if abs(millis) >= size:
        raise ValueError(f"{what}: the offset ({millis} ms) must be smaller than the size "
                         f"({size} ms)")  # fmt: skip
    return millis


class _TimeWindows(WindowAssigner[Any, TimeWindow]):
    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, TimeWindow]:
        return EventTimeTrigger() if self.is_event_time() else ProcessingTimeTrigger()


class _ProcessingTime:
    """Mixed into the processing-time assigners."""

    def is_event_time(self) -> bool:
        return False


class TumblingEventTimeWindows(_TimeWindows):
    def __init__(self, size: int, offset: int = 0) -> None:
        self.size, self.offset = size, offset

    @staticmethod
    def of(size: Length, offset: Length = 0) -> TumblingEventTimeWindows:
        millis = _positive(size, "TumblingEventTimeWindows.of: the size")
        return TumblingEventTimeWindows(millis, _offset(offset, millis, "TumblingEventTimeWindows"))

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        self._check_timestamp(element, timestamp)
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]


class TumblingProcessingTimeWindows(_ProcessingTime, TumblingEventTimeWindows):
    @staticmethod
    def of(size: Length, offset: Length = 0) -> TumblingProcessingTimeWindows:
        millis = _positive(size, "TumblingProcessingTimeWindows.of: the size")
        return TumblingProcessingTimeWindows(
            millis, _offset(offset, millis, "TumblingProcessingTimeWindows")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        start = TimeWindow.get_window_start_with_offset(
            context.get_current_processing_time(), self.offset, self.size
        )
        return [TimeWindow(start, start + self.size)]


class SlidingEventTimeWindows(_TimeWindows):
    def __init__(self, size: int, slide: int, offset: int = 0) -> None:
        self.size, self.slide, self.offset = size, slide, offset

    @staticmethod
    def of(size: Length, slide: Length, offset: Length = 0) -> SlidingEventTimeWindows:
        size_ms = _positive(size, "SlidingEventTimeWindows.of: the size")
        slide_ms = _positive(slide, "SlidingEventTimeWindows.of: the slide")
        return SlidingEventTimeWindows(
            size_ms, slide_ms, _offset(offset, slide_ms, "SlidingEventTimeWindows")
        )

    def _windows(self, at: int) -> list[TimeWindow]:
        last_start = TimeWindow.get_window_start_with_offset(at, self.offset, self.slide)
        return [
            TimeWindow(start, start + self.size)
            for start in range(last_start, at - self.size, -self.slide)
        ]

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        self._check_timestamp(element, timestamp)
        return self._windows(timestamp)


class SlidingProcessingTimeWindows(_ProcessingTime, SlidingEventTimeWindows):
    @staticmethod
    def of(size: Length, slide: Length, offset: Length = 0) -> SlidingProcessingTimeWindows:
        size_ms = _positive(size, "SlidingProcessingTimeWindows.of: the size")
        slide_ms = _positive(slide, "SlidingProcessingTimeWindows.of: the slide")
        return SlidingProcessingTimeWindows(
            size_ms, slide_ms, _offset(offset, slide_ms, "SlidingProcessingTimeWindows")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        return self._windows(context.get_current_processing_time())


class SessionWindowTimeGapExtractor:
    """The gap of the session a record opens, from the record (``with_dynamic_gap``)."""

    def extract(self, element: Any) -> int:
        raise NotImplementedError


def _gap_extractor(extractor: Any, assigner: str) -> Any:
    if not isinstance(extractor, SessionWindowTimeGapExtractor) and not callable(extractor):
        raise TypeError(
            f"{assigner}.with_dynamic_gap takes a SessionWindowTimeGapExtractor or a "
            f"function of the record, not {type(extractor).__name__}"
        )
    return extractor


class MergingWindowAssigner(WindowAssigner[T, W]):
    """An assigner whose windows may merge (sessions): ``merge_windows`` calls
    ``callback.merge(to_be_merged, merge_result)`` for each group of windows that become one."""

    class MergeCallback(Generic[W2]):
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None:
            raise NotImplementedError

    def merge_windows(self, windows: Iterable[W], callback: MergeCallback[W]) -> None:
        raise NotImplementedError


_GapExtractor = SessionWindowTimeGapExtractor | Callable[[Any], Length]


class EventTimeSessionWindows(_TimeWindows, MergingWindowAssigner[Any, TimeWindow]):
    def __init__(self, gap: int | None, extractor: _GapExtractor | None) -> None:
        self.gap, self.extractor = gap, extractor

    @classmethod
    def with_gap(cls, gap: Length) -> Self:
        return cls(_positive(gap, f"{cls.__name__}.with_gap: the gap"), None)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicEventTimeSessionWindows(_gap_extractor(extractor, "EventTimeSessionWindows"))

    def _gap_of(self, element: Any) -> int:
        if self.extractor is None:
            assert self.gap is not None  # a session has a gap or an extractor of gaps
            return self.gap
        # an extractor's method, or the function itself
        extract = cast(Callable[[Any], Length], getattr(self.extractor, "extract", self.extractor))
        gap = millis_of(extract(element), "the session gap extractor's result")
        if gap <= 0:
            raise ValueError(
                f"the session gap extractor gave {gap} ms for record {element!r:.200}; a gap "
                "must be positive"
            )
        return gap

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        self._check_timestamp(element, timestamp)
        return [TimeWindow(timestamp, timestamp + self._gap_of(element))]

    def merge_windows(
        self,
        windows: Iterable[TimeWindow],
        callback: MergingWindowAssigner.MergeCallback[TimeWindow],
    ) -> None:
        for merged, members in merge_time_windows(list(windows)):
            if len(members) > 1:
                callback.merge(members, merged)


class DynamicEventTimeSessionWindows(EventTimeSessionWindows):
    """Event-time sessions whose gap each record gives (``with_dynamic_gap``)."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicEventTimeSessionWindows(
            _gap_extractor(extractor, "DynamicEventTimeSessionWindows")
        )


class ProcessingTimeSessionWindows(_ProcessingTime, EventTimeSessionWindows):
    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "ProcessingTimeSessionWindows")
        )

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[TimeWindow]:
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self._gap_of(element))]


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows):
    """Processing-time sessions whose gap each record gives (``with_dynamic_gap``)."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "DynamicProcessingTimeSessionWindows")
        )


class GlobalWindows(_ProcessingTime, WindowAssigner[Any, GlobalWindow]):
    """Every record in one window per key, which only a trigger (e.g. a count) fires."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[GlobalWindow]:
        return [GlobalWindow()]

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, GlobalWindow]:
        return NeverTrigger()

    def get_window_serializer(self) -> TypeSerializer[GlobalWindow]:
        return GlobalWindowSerializer()


class _CountWindows(_ProcessingTime, WindowAssigner[Any, CountWindow]):
    """Windows by the count of the key's records, kept in the key's state (the assigner
    context's runtime context), so that it is checkpointed and rescaled with the key. The
    default trigger fires a window at ``size`` records, as PyFlink's ``CountTrigger``, and
    purges it then (a count window receives nothing after it fired, and its contents would
    otherwise stay in state: a count window never ends by time)."""

    def __init__(self, window_size: int, name: str) -> None:
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
            raise ValueError(f"{type(self).__name__} needs a positive window size, not "
                             f"{window_size!r}")  # fmt: skip
        self._window_size = window_size
        self._count_descriptor = ValueStateDescriptor(name, Types.LONG())

    def _next_count(self, context: AssignerContext) -> int:
        """The number of records of the key before this one (and counts this one)."""
        state = context.get_runtime_context().get_state(self._count_descriptor)
        count = state.value() or 0
        state.update(count + 1)
        return count

    def get_default_trigger(self, env: Any = None) -> Trigger[Any, CountWindow]:
        return PurgingTrigger(CountTrigger(self._window_size))

    def get_window_serializer(self) -> TypeSerializer[CountWindow]:
        return CountWindowSerializer()


class CountTumblingWindowAssigner(_CountWindows):
    """Each key's records in windows of ``window_size`` records, one after the other."""

    def __init__(self, window_size: int) -> None:
        super().__init__(window_size, "tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[CountWindow]:
        return [CountWindow(self._next_count(context) // self._window_size)]

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(_CountWindows):
    """Each key's records in windows of ``window_size`` records, a new one every
    ``window_slide`` records (window *i* holds records ``i * slide`` to ``i * slide + size -
    1`` of the key)."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        super().__init__(window_size, "slide-count-assigner")
        if isinstance(window_slide, bool) or not isinstance(window_slide, int) or window_slide < 1:
            raise ValueError(f"CountSlidingWindowAssigner needs a positive slide, not "
                             f"{window_slide!r}")  # fmt: skip
        self._window_slide = window_slide

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def assign_windows(
        self, element: Any, timestamp: int, context: AssignerContext
    ) -> list[CountWindow]:
        count = self._next_count(context)
        size, slide = self._window_size, self._window_slide
        last = count // slide
        first = max(0, -(-(count - size + 1) // slide))  # the first window still holding it
        return [CountWindow(i) for i in range(last, first - 1, -1)]

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"
