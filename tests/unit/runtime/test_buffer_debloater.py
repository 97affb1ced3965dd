"""Buffer debloating's decision: the size a consumer announces follows its throughput (records
per second not idle) so that the buffers in flight hold the target time of work, smoothed,
bounded, and announced only when it moved enough. Times are handed in: no clock, no sleep."""

from __future__ import annotations

import pytest

from barrierflow.runtime.network.buffer_debloater import (
    BufferDebloater,
    DebloatSettings,
    buffers_in_use,
)

MS = 1_000_000  # ns


class Consumer:
    """A task's counters, advanced period by period."""

    def __init__(self, settings: DebloatSettings, in_use: int) -> None:
        self.now_ns = 0
        self.records = 0
        self.idle_ns = 0
        self.debloater = BufferDebloater(settings, in_use, 0)
        self.period_ns = settings.period_ms * MS

    def run_period(self, records_per_s: float, idle_share: float = 0.0) -> int | None:
        """One period in which it took records at ``records_per_s`` while not idle."""
        busy_ns = self.period_ns * (1 - idle_share)
        self.records += round(records_per_s * busy_ns / 1e9)
        self.idle_ns += self.period_ns - busy_ns
        self.now_ns += self.period_ns
        return self.debloater.sample(self.now_ns, self.records, self.idle_ns)

    def announced_over(self, periods: int, records_per_s: float) -> list[int]:
        sizes = [self.run_period(records_per_s) for _ in range(periods)]
        return [s for s in sizes if s is not None]


def test_a_slow_consumer_announces_smaller_buffers_until_they_hold_the_target_time():
    # 2 ms a record, two channels of 4 credits: 12 buffers in flight should hold 1 s of work
    consumer = Consumer(DebloatSettings(target_ms=1000), buffers_in_use(2, 4))
    announced = consumer.announced_over(200, records_per_s=500)
    assert announced == sorted(announced, reverse=True)  # only ever smaller
    # 500 * 1 s / 12 = 42 records; the last announced within the threshold (25%) of it
    assert announced[-1] == pytest.approx(42, rel=0.25)
    in_flight_s = announced[-1] * 12 / 500
    assert 0.75 <= in_flight_s <= 1.25  # against 1024 * 12 / 500: 24.6 s undebloated
    assert consumer.debloater.estimated_time_to_consume_ms() == pytest.approx(in_flight_s * 1000)


def test_a_fast_consumer_keeps_the_configured_size_and_announces_nothing():
    consumer = Consumer(DebloatSettings(max_size=1024), buffers_in_use(2, 4))
    assert consumer.announced_over(100, records_per_s=3_000_000) == []
    assert consumer.debloater.announced == 1024


def test_a_very_slow_consumer_stops_at_the_floor():
    settings = DebloatSettings(min_size=8)
    consumer = Consumer(settings, buffers_in_use(2, 4))
    announced = consumer.announced_over(300, records_per_s=1)
    assert announced[-1] == 8 and min(announced) == 8


def test_the_size_at_most_doubles_a_period_when_the_consumer_speeds_up():
    settings = DebloatSettings(samples=1, threshold_percentages=0)  # no smoothing
    consumer = Consumer(settings, 10)
    assert consumer.run_period(records_per_s=50) == settings.min_size  # 50 * 1 s / 10: 5
    sizes = [consumer.run_period(records_per_s=1_000_000) for _ in range(8)]
    assert sizes == [16, 32, 64, 128, 256, 512, 1024, None]


def test_small_changes_are_not_announced():
    settings = DebloatSettings(samples=1, threshold_percentages=25)
    consumer = Consumer(settings, 10)
    assert consumer.run_period(records_per_s=4000) == 400
    assert consumer.run_period(records_per_s=4500) is None  # 450: within 25% of 400
    assert consumer.run_period(records_per_s=5100) == 510


def test_idle_time_does_not_count_as_slowness():
    settings = DebloatSettings(samples=1, threshold_percentages=0)
    consumer = Consumer(settings, 10)
    # 5,000 records/s while busy, busy a tenth of the time: its pace is 5,000, not 500
    assert consumer.run_period(records_per_s=5000, idle_share=0.9) == 500
    assert consumer.debloater.throughput == pytest.approx(5000)


def test_a_period_idle_throughout_changes_nothing():
    settings = DebloatSettings(samples=1, threshold_percentages=0)
    consumer = Consumer(settings, 10)
    assert consumer.run_period(records_per_s=4000) == 400
    assert consumer.run_period(records_per_s=0, idle_share=1.0) is None
    assert consumer.debloater.announced == 400 and consumer.debloater.throughput == 4000


def test_nothing_is_decided_before_a_period_passed():
    debloater = BufferDebloater(DebloatSettings(period_ms=200, samples=1), 10, now_ns=0)
    assert debloater.sample(199 * MS, 10, 0) is None
    assert debloater.sample(200 * MS, 10, 0) == 8  # 10 records in 0.2 s: 50/s, 5 a buffer
    assert debloater.throughput == pytest.approx(50)


def test_in_flight_counts_the_credited_buffers_and_two_more_per_channel():
    assert buffers_in_use(num_channels=3, initial_credit=4) == 18


@pytest.mark.parametrize(
    "settings",
    [
        {"min_size": 0},
        {"min_size": 2048, "max_size": 1024},
        {"target_ms": 0},
        {"period_ms": 0},
        {"samples": 0},
    ],
)
def test_settings_out_of_range_are_refused(settings):
    with pytest.raises(ValueError):
        DebloatSettings(**settings)
