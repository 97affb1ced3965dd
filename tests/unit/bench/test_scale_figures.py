"""The rescale and autoscale benches' pure parts: a rescale's downtime read as the largest gap
between committed stamps around it, the median and p99 of a few, and the exactly-once check
that makes a fast but wrong rescale fail the run."""

from __future__ import annotations

import pytest
from scale_figures import (
    NotExactlyOnce,
    check_keyed_counts,
    expected_count,
    lag_after,
    largest_gap,
    median_p99,
    schedule,
)

KEYS = 3


def failure_free(n: int, keys: int = KEYS) -> list[list[int]]:
    counts: dict[int, int] = {}
    out = []
    for v in range(1, n + 1):
        counts[v % keys] = counts.get(v % keys, 0) + 1
        out.append([v % keys, v, counts[v % keys]])
    return out


def test_the_largest_gap_around_an_interval_counts_a_gap_that_crosses_its_edges():
    stamps = [0.0, 0.1, 0.2, 1.7, 1.8, 1.9, 5.0]
    assert largest_gap(stamps, 0.5, 1.0).seconds == pytest.approx(1.5)  # 0.2 -> 1.7, whole
    assert largest_gap(stamps, 1.75, 1.85).seconds == pytest.approx(0.1)
    assert largest_gap(stamps, 0.0, 6.0).seconds == pytest.approx(3.1)
    assert largest_gap([1.0], 0.0, 2.0) is None


def test_the_p99_of_ten_values_is_their_largest():
    values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    assert median_p99(values) == (5.5, 10.0)
    assert median_p99(list(range(1, 201)))[1] == 198


def test_the_count_of_a_value_is_that_of_a_failure_free_run():
    for v, (key, value, count) in enumerate(failure_free(50, 7), start=1):
        assert (key, value, expected_count(v, 7)) == (key, value, count)


def test_a_failure_free_output_passes_in_any_order():
    records = failure_free(100)
    assert check_keyed_counts(reversed(records), KEYS) == 100
    assert check_keyed_counts(records[10:], KEYS, expected_values=range(11, 101)) == 90


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda r: [*r[:40], *r[41:]], "1 values missing (first [41])"),
        (lambda r: [*r, r[7]], "committed more than once (first [8])"),
        (lambda r: [*r[:5], [0, 6, 3], *r[6:]], "value 6: key 0, count 3"),
        (lambda r: [*r, [2, 101, 34]], "never produced (first [101])"),
    ],
)
def test_a_lost_duplicated_or_miscounted_record_fails_the_run(damage, says):
    with pytest.raises(NotExactlyOnce, match=r"not exactly once") as raised:
        check_keyed_counts(damage(failure_free(100)), KEYS, expected_values=range(1, 101))
    assert says in str(raised.value)


def test_a_schedule_is_known_before_the_run_and_keeps_within_its_noise():
    counts = schedule([(3, 100), (2, 300)])
    assert counts == [100, 100, 100, 300, 300]
    noisy = schedule([(1000, 1000)], noise=0.2, seed=3)
    assert noisy == schedule([(1000, 1000)], noise=0.2, seed=3)
    assert min(noisy) >= 800 and max(noisy) <= 1200 and 980 < sum(noisy) / 1000 < 1020


def test_the_lag_after_a_step_peaks_then_stays_within_the_bound_from_a_point_on():
    delays = [(9.0, 30.0), (10.0, 1.0), (12.0, 15.0), (14.0, 22.0), (16.0, 11.0), (18.0, 4.0),
              (20.0, 9.0), (25.0, 50.0)]  # fmt: skip
    lag = lag_after(delays, 10.0, 25.0, 10.0)
    assert (lag.peak_s, lag.peak_at_s, lag.within_s) == (22.0, 4.0, 8.0)
    assert lag_after(delays, 10.0, 30.0, 10.0).within_s is None  # 50 s at the end
    assert lag_after(delays, 100.0, 200.0, 10.0) is None
