"""Watermark strategies and their generators, with the time given: bounded out-of-orderness,
monotonous timestamps, idleness, timestamp assigners; ``Duration`` and ``Time``."""

from __future__ import annotations

import pytest

from barrierflow.eventtime.durations import Duration, Time, millis_of
from barrierflow.eventtime.watermark_strategy import TimestampAssigner, WatermarkStrategy
from barrierflow.eventtime.watermark_valve import MIN_WATERMARK


def test_durations_and_times_are_whole_milliseconds():
    assert Duration.of_seconds(1.5) == Duration.of_millis(1500)
    assert Duration.of_minutes(2).to_milliseconds() == 120_000
    assert Time.hours(1).to_milliseconds() == 3_600_000
    assert Time.seconds(5) < Time.minutes(1)
    assert millis_of(Time.milliseconds(7), "size") == millis_of(7, "size") == 7
    with pytest.raises(TypeError, match=r"Duration\.of_seconds takes a number, not str '5'"):
        Duration.of_seconds("5")
    with pytest.raises(TypeError, match="size takes a Duration, a Time or milliseconds"):
        millis_of(1.5, "size")


def test_bounded_out_of_orderness_trails_the_highest_timestamp_by_the_bound_minus_one():
    generator = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(100))
    g = generator.create_generator()
    assert g.on_periodic_emit(0) < MIN_WATERMARK + 1  # nothing seen: as low as it goes
    g.on_event(1_000, now_ms=0)
    g.on_event(900, now_ms=0)  # out of order: the highest stays
    assert g.on_periodic_emit(0) == 1_000 - 100 - 1
    g.on_event(1_500, now_ms=0)
    assert g.on_periodic_emit(0) == 1_399


def test_monotonous_timestamps_put_the_watermark_just_below_the_latest():
    g = WatermarkStrategy.for_monotonous_timestamps().create_generator()
    g.on_event(42, now_ms=0)
    assert g.on_periodic_emit(0) == 41


def test_no_watermarks_makes_no_generator():
    assert WatermarkStrategy.no_watermarks().create_generator() is None
    assert not WatermarkStrategy.no_watermarks().generates_watermarks


def test_a_split_without_records_for_the_idle_timeout_turns_idle_and_active_on_its_next_record():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(1))
    g = strategy.create_generator()
    g.on_periodic_emit(0)
    g.on_periodic_emit(999)
    assert not g.idle
    g.on_periodic_emit(1_000)  # no record since the start, a second ago
    assert g.idle
    assert g.on_event(5, now_ms=1_200) is True  # it was idle
    assert not g.idle
    g.on_periodic_emit(2_100)
    assert not g.idle
    g.on_periodic_emit(2_200)
    assert g.idle


def test_the_assigner_gives_the_timestamp_as_a_class_or_a_function():
    class FromField(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value["ts"]

    by_class = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FromField())
    by_function = WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda v, _: v[1])
    assert by_class.extract_timestamp({"ts": 7}, 0) == 7
    assert by_function.extract_timestamp(("a", 9), 0) == 9
    assert WatermarkStrategy.no_watermarks().extract_timestamp("x", 3) == 3  # kept


def test_strategies_are_immutable_and_refuse_bad_arguments():
    base = WatermarkStrategy.for_monotonous_timestamps()
    idle = base.with_idleness(Duration.of_seconds(1))
    assert base.idle_timeout_ms is None and idle.idle_timeout_ms == 1_000
    with pytest.raises(ValueError, match="must not be negative"):
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(-1))
    with pytest.raises(ValueError, match="idle timeout must be positive"):
        base.with_idleness(Duration.of_millis(0))
    with pytest.raises(TypeError, match="TimestampAssigner or a function"):
        base.with_timestamp_assigner(5)
