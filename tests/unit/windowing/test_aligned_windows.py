"""Aligned windows' accumulators alone: each record in the windows its assigner gives, late
records counted, windows fired by end and their keys in order of arrival, and the restore
checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.windowing.aligned_windows import (
    AccumulateFailed,
    AlignedWindowAccumulators,
    AlignedWindows,
    Folding,
)
from barrierflow.windowing.window_assigners import (
    AssignerContext,
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from barrierflow.windowing.windows import TimeWindow


def itself(value):
    return value


def no_timestamp(record):
    raise ValueError(f"{record} has no timestamp")


def by_key(accumulators: AlignedWindowAccumulators) -> dict:
    """Each key's open windows and accumulators."""
    keyed: dict = {}
    for window, of_keys in accumulators.open_windows():
        for key, accumulator in of_keys.items():
            keyed.setdefault(key, {})[window] = accumulator
    return keyed


def listing(windows: AlignedWindows) -> AlignedWindowAccumulators:
    """Accumulators that list each key's values in its windows."""
    return AlignedWindowAccumulators(
        windows,
        select=lambda record: record[0],
        folding=Folding(lambda record: (record[1],), lambda acc, record: (*acc, record[1]), itself),
        timestamp_missing=no_timestamp,
    )


assigners_st = st.one_of(
    st.integers(1, 50).flatmap(
        lambda size: st.integers(-size + 1, size - 1).map(
            lambda offset: TumblingEventTimeWindows(size, offset)
        )
    ),
    st.tuples(st.integers(1, 50), st.integers(1, 50)).flatmap(
        lambda sizes: st.integers(-sizes[1] + 1, sizes[1] - 1).map(
            lambda offset: SlidingEventTimeWindows(sizes[0], sizes[1], offset)
        )
    ),
)


@given(assigners_st, st.lists(st.integers(-500, 500), min_size=1, max_size=30))
def test_each_record_goes_into_the_windows_its_assigner_gives(assigner, timestamps):
    accumulators = listing(AlignedWindows.of(assigner))
    records = [("k", i) for i in range(len(timestamps))]
    late = accumulators.add_batch(records, timestamps, -(2**63))
    expected: dict[TimeWindow, tuple] = {}
    in_none = 0  # sliding windows shorter than their slide leave gaps: records there are late
    for record, timestamp in zip(records, timestamps, strict=True):
        windows = assigner.assign_windows(record, timestamp, AssignerContext(0))
        in_none += not windows
        for window in windows:
            expected[window] = (*expected.get(window, ()), record[1])
    assert late == in_none
    assert by_key(accumulators) == ({"k": expected} if expected else {})


def test_records_whose_windows_all_ended_at_the_watermark_are_late():
    accumulators = listing(AlignedWindows.of(SlidingEventTimeWindows.of(10, 5)))
    # 12 is in [5, 15) and [10, 20); with the watermark at 14, only [10, 20) takes it
    late = accumulators.add_batch([("a", 1), ("a", 2), ("a", 3)], [12, 3, 9], watermark=14)
    assert late == 2
    assert by_key(accumulators) == {"a": {TimeWindow(10, 20): (1,)}}


def test_a_watermark_fires_the_ends_it_passed_earliest_first_keys_in_order_of_arrival():
    accumulators = listing(AlignedWindows.of(TumblingEventTimeWindows.of(10)))
    accumulators.add_batch([("b", 1), ("b", 2), ("a", 3), ("c", 4), ("a", 5)], [12, 3, 5, 15, 29],
                           watermark=-1)  # fmt: skip
    assert accumulators.fire(9) == ([(2,), (3,)], [9, 9])  # b before a: b came first
    assert accumulators.fire(19) == ([(1,), (4,)], [19, 19])
    assert accumulators.fire(19) == ([], [])
    assert len(accumulators) == 1
    assert accumulators.fire(2**63 - 1) == ([(5,)], [29])


def test_an_accumulator_of_none_emits_nothing_and_starts_afresh():
    def add(acc, record):
        raise AssertionError("a None accumulator is no accumulator")

    accumulators = AlignedWindowAccumulators(
        AlignedWindows.of(TumblingEventTimeWindows.of(10)),
        lambda record: record, Folding(lambda record: None, add, itself), no_timestamp,
    )  # fmt: skip
    accumulators.add_batch(["a", "a"], [1, 2], watermark=-1)
    assert accumulators.fire(9) == ([], [])


def test_a_failing_function_names_its_record_and_key():
    def first(record):
        raise ZeroDivisionError

    accumulators = AlignedWindowAccumulators(
        AlignedWindows.of(TumblingEventTimeWindows.of(10)),
        lambda record: record[0], Folding(first, first, itself), no_timestamp,
    )  # fmt: skip
    with pytest.raises(AccumulateFailed) as failed:
        accumulators.add_batch([("a", 1)], [1], watermark=-1)
    assert (failed.value.record, failed.value.key) == (("a", 1), "a")
    assert isinstance(failed.value.__cause__, ZeroDivisionError)


def test_a_record_without_a_timestamp_gets_the_assigners_error():
    accumulators = listing(AlignedWindows.of(TumblingEventTimeWindows.of(10)))
    with pytest.raises(AccumulateFailed) as failed:
        accumulators.add_batch([("a", 1)], [NO_TIMESTAMP], watermark=-1)
    assert "has no timestamp" in str(failed.value.__cause__)


def test_only_event_time_tumbling_and_sliding_assigners_are_aligned():
    class MyTumbling(TumblingEventTimeWindows):
        pass

    assert AlignedWindows.of(TumblingEventTimeWindows.of(10, 3)) == AlignedWindows(10, 10, 3)
    assert AlignedWindows.of(SlidingEventTimeWindows.of(10, 4)) == AlignedWindows(10, 4, 0)
    assert AlignedWindows.of(TumblingProcessingTimeWindows.of(10)) is None
    assert AlignedWindows.of(EventTimeSessionWindows.with_gap(10)) is None
    assert AlignedWindows.of(MyTumbling(10)) is None


def test_restore_takes_only_windows_of_its_grid_and_keeps_their_order():
    windows = AlignedWindows(10, 5, 1)
    assert windows.holds(TimeWindow(6, 16)) and not windows.holds(TimeWindow(5, 15))
    assert not windows.holds(TimeWindow(6, 11))
    accumulators = listing(windows)
    accumulators.restore([("b", TimeWindow(6, 16), (1,)), ("a", TimeWindow(6, 16), (2,))])
    assert accumulators.fire(15) == ([(1,), (2,)], [15, 15])
    with pytest.raises(ValueError, match="not one of"):
        accumulators.restore([("a", TimeWindow(0, 10), (1,))])
