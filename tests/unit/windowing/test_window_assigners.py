"""Window assigners and session merging, by hand-computed windows and against a brute-force
definition: tumbling, sliding (with offsets and negative timestamps), sessions with fixed and
dynamic gaps, processing-time variants, global windows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.eventtime.durations import Duration, Time
from barrierflow.windowing.window_assigners import (
    NO_TIMESTAMP,
    AssignerContext,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from barrierflow.windowing.windows import GlobalWindow, TimeWindow, merge_time_windows


def at(processing_time_ms: int) -> AssignerContext:
    """The assigner context of a record arriving at ``processing_time_ms``."""
    return AssignerContext(processing_time_ms)


def test_a_tumbling_window_holds_its_start_and_not_its_end():
    five = TumblingEventTimeWindows.of(Time.seconds(5))
    assert five.assign_windows("r", 0, at(0)) == [TimeWindow(0, 5_000)]
    assert five.assign_windows("r", 4_999, at(0)) == [TimeWindow(0, 5_000)]
    assert five.assign_windows("r", 5_000, at(0)) == [TimeWindow(5_000, 10_000)]
    assert five.assign_windows("r", -1, at(0)) == [TimeWindow(-5_000, 0)]
    assert TimeWindow(0, 5_000).max_timestamp() == 4_999


def test_an_offset_shifts_the_windows():
    hourly_from_quarter_past = TumblingEventTimeWindows.of(Time.hours(1), Time.minutes(15))
    assert hourly_from_quarter_past.assign_windows("r", 0, at(0)) == [
        TimeWindow(-45 * 60_000, 15 * 60_000)
    ]


def test_a_sliding_window_assigns_a_record_to_size_over_slide_windows_newest_first():
    sliding = SlidingEventTimeWindows.of(Time.seconds(10), Time.seconds(5))
    assert sliding.assign_windows("r", 7_000, at(0)) == [
        TimeWindow(5_000, 15_000),
        TimeWindow(0, 10_000),
    ]


@given(
    size=st.integers(1, 50),
    slide=st.integers(1, 50),
    offset=st.integers(-49, 49),
    timestamp=st.integers(-500, 500),
)
def test_sliding_windows_are_exactly_the_aligned_windows_that_hold_the_timestamp(
    size, slide, offset, timestamp
):
    if abs(offset) >= slide:
        return
    assigned = SlidingEventTimeWindows.of(size, slide, offset).assign_windows("r", timestamp, at(0))
    expected = {
        TimeWindow(start, start + size)
        for start in range(timestamp - size - slide, timestamp + slide + 1)
        if (start - offset) % slide == 0 and start <= timestamp < start + size
    }
    assert set(assigned) == expected and len(assigned) == len(expected)


def test_processing_time_assigners_use_the_arrival_time_not_the_timestamp():
    tumbling = TumblingProcessingTimeWindows.of(Duration.of_seconds(1))
    assert tumbling.assign_windows("r", NO_TIMESTAMP, at(2_500)) == [TimeWindow(2_000, 3_000)]
    assert not tumbling.is_event_time()
    sliding = SlidingProcessingTimeWindows.of(2_000, 1_000)
    assert sliding.assign_windows("r", NO_TIMESTAMP, at(2_500)) == [
        TimeWindow(2_000, 4_000),
        TimeWindow(1_000, 3_000),
    ]
    session = ProcessingTimeSessionWindows.with_gap(Time.seconds(1))
    assert session.assign_windows("r", NO_TIMESTAMP, at(100)) == [TimeWindow(100, 1_100)]


def test_a_record_without_a_timestamp_cannot_go_into_an_event_time_window():
    with pytest.raises(ValueError, match="record 'clicks' has none: call assign_timestamps"):
        TumblingEventTimeWindows.of(Time.seconds(1)).assign_windows("clicks", NO_TIMESTAMP, at(0))


def test_session_windows_open_a_gap_long_window_per_record_and_merge_those_that_meet():
    sessions = EventTimeSessionWindows.with_gap(Time.seconds(10))
    assert isinstance(sessions, MergingWindowAssigner)
    windows = [sessions.assign_windows("r", t, at(0))[0] for t in (0, 5_000, 15_000, 40_000)]
    assert merge_time_windows(windows) == [
        (TimeWindow(0, 25_000), [TimeWindow(0, 10_000), TimeWindow(5_000, 15_000),
                                 TimeWindow(15_000, 25_000)]),
        (TimeWindow(40_000, 50_000), [TimeWindow(40_000, 50_000)]),
    ]  # fmt: skip


def test_a_dynamic_gap_comes_from_the_record():
    class GapField(SessionWindowTimeGapExtractor):
        def extract(self, element):
            return element["gap"]

    by_class = EventTimeSessionWindows.with_dynamic_gap(GapField())
    assert by_class.assign_windows({"gap": 300}, 1_000, at(0)) == [TimeWindow(1_000, 1_300)]
    by_function = EventTimeSessionWindows.with_dynamic_gap(lambda r: Time.seconds(r))
    assert by_function.assign_windows(2, 0, at(0)) == [TimeWindow(0, 2_000)]
    with pytest.raises(ValueError, match="gave 0 ms for record 0; a gap must be positive"):
        by_function.assign_windows(0, 0, at(0))


def test_global_windows_put_every_record_into_one_window():
    assert GlobalWindows.create().assign_windows("r", NO_TIMESTAMP, at(0)) == [GlobalWindow()]


def test_bad_sizes_and_offsets_are_refused_with_the_assigner_named():
    with pytest.raises(ValueError, match=r"Windows\.of: the size must be positive"):
        TumblingEventTimeWindows.of(Time.seconds(0))
    with pytest.raises(ValueError, match=r"offset \(5000 ms\) must be smaller than the size"):
        TumblingEventTimeWindows.of(Time.seconds(5), Time.seconds(5))
    with pytest.raises(ValueError, match="the slide must be positive"):
        SlidingEventTimeWindows.of(Time.seconds(5), Time.seconds(-1))
    with pytest.raises(TypeError, match="with_dynamic_gap takes a SessionWindowTimeGapExtractor"):
        EventTimeSessionWindows.with_dynamic_gap(5)
