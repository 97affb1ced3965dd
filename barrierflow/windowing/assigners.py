"""Window assigners, as PyFlink programs name them: which windows a record belongs to, by its
event timestamp or by the processing time it arrives at. Performs no I/O.

Sizes, slides, gaps and offsets are a ``Time``, a ``Duration`` or milliseconds. A record whose
event timestamp is missing cannot be put into an event-time window: the error names it and says
to assign timestamps (``assign_timestamps_and_watermarks``).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from barrierflow.eventtime.durations import Duration, Time, millis_of
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.windowing.windows import GlobalWindow, TimeWindow

Length = Time | Duration | int
T = TypeVar("T")
W = TypeVar("W")


class WindowAssigner(Generic[T, W]):
    """``assign_windows(element, timestamp, current_processing_time)`` -> the windows."""

    is_event_time = True
    is_merging = False

    def assign_windows(
        self, element: Any, timestamp: int, current_processing_time: int
    ) -> list[Any]:
        raise NotImplementedError

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


class TumblingEventTimeWindows(WindowAssigner):
    def __init__(self, size: int, offset: int = 0) -> None:
        self.size, self.offset = size, offset

    @staticmethod
    def of(size: Length, offset: Length = 0) -> TumblingEventTimeWindows:
        millis = _positive(size, "TumblingEventTimeWindows.of: the size")
        return TumblingEventTimeWindows(millis, _offset(offset, millis, "TumblingEventTimeWindows"))

    def assign_windows(self, element, timestamp, current_processing_time):
        self._check_timestamp(element, timestamp)
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]


class TumblingProcessingTimeWindows(TumblingEventTimeWindows):
    is_event_time = False

    @staticmethod
    def of(size: Length, offset: Length = 0) -> TumblingProcessingTimeWindows:
        millis = _positive(size, "TumblingProcessingTimeWindows.of: the size")
        return TumblingProcessingTimeWindows(
            millis, _offset(offset, millis, "TumblingProcessingTimeWindows")
        )

    def assign_windows(self, element, timestamp, current_processing_time):
        start = TimeWindow.get_window_start_with_offset(
            current_processing_time, self.offset, self.size
        )
        return [TimeWindow(start, start + self.size)]


class SlidingEventTimeWindows(WindowAssigner):
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

    def assign_windows(self, element, timestamp, current_processing_time):
        self._check_timestamp(element, timestamp)
        return self._windows(timestamp)


class SlidingProcessingTimeWindows(SlidingEventTimeWindows):
    is_event_time = False

    @staticmethod
    def of(size: Length, slide: Length, offset: Length = 0) -> SlidingProcessingTimeWindows:
        size_ms = _positive(size, "SlidingProcessingTimeWindows.of: the size")
        slide_ms = _positive(slide, "SlidingProcessingTimeWindows.of: the slide")
        return SlidingProcessingTimeWindows(
            size_ms, slide_ms, _offset(offset, slide_ms, "SlidingProcessingTimeWindows")
        )

    def assign_windows(self, element, timestamp, current_processing_time):
        return self._windows(current_processing_time)


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


class EventTimeSessionWindows(WindowAssigner):
    is_merging = True

    def __init__(self, gap: int | None, extractor: SessionWindowTimeGapExtractor | None) -> None:
        self.gap, self.extractor = gap, extractor

    @classmethod
    def with_gap(cls, gap: Length):
        return cls(_positive(gap, f"{cls.__name__}.with_gap: the gap"), None)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicEventTimeSessionWindows(_gap_extractor(extractor, "EventTimeSessionWindows"))

    def _gap_of(self, element: Any) -> int:
        if self.extractor is None:
            return self.gap
        extract = getattr(self.extractor, "extract", self.extractor)
        gap = millis_of(extract(element), "the session gap extractor's result")
        if gap <= 0:
            raise ValueError(
                f"the session gap extractor gave {gap} ms for record {element!r:.200}; a gap "
                "must be positive"
            )
        return gap

    def assign_windows(self, element, timestamp, current_processing_time):
        self._check_timestamp(element, timestamp)
        return [TimeWindow(timestamp, timestamp + self._gap_of(element))]


class DynamicEventTimeSessionWindows(EventTimeSessionWindows):
    """Event-time sessions whose gap each record gives (``with_dynamic_gap``)."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicEventTimeSessionWindows(
            _gap_extractor(extractor, "DynamicEventTimeSessionWindows")
        )


class ProcessingTimeSessionWindows(EventTimeSessionWindows):
    is_event_time = False

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "ProcessingTimeSessionWindows")
        )

    def assign_windows(self, element, timestamp, current_processing_time):
        return [
            TimeWindow(current_processing_time, current_processing_time + self._gap_of(element))
        ]


class DynamicProcessingTimeSessionWindows(ProcessingTimeSessionWindows):
    """Processing-time sessions whose gap each record gives (``with_dynamic_gap``)."""

    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        super().__init__(None, session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> Any:
        return DynamicProcessingTimeSessionWindows(
            _gap_extractor(extractor, "DynamicProcessingTimeSessionWindows")
        )


class GlobalWindows(WindowAssigner):
    """Every record in one window per key, which only a trigger (e.g. a count) fires."""

    is_event_time = False

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(self, element, timestamp, current_processing_time):
        return [GlobalWindow()]
