"""Restart strategies: whether and after which delay a failed job restarts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.cluster.restart_strategy import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    NoRestart,
)
from barrierflow.common import RestartStrategies


def test_no_restart_gives_up_on_the_first_failure():
    assert NoRestart().on_failure(0.0) is None
    assert NoRestart().on_failure(5.0) is None


def test_fixed_delay_restarts_n_times_then_gives_up():
    strategy = FixedDelayRestart(3, 2.5)
    delays = [strategy.on_failure(float(t)) for t in range(5)]
    assert delays == [2.5, 2.5, 2.5, None, None]


def test_fixed_delay_with_zero_attempts_never_restarts():
    assert FixedDelayRestart(0, 1.0).on_failure(0.0) is None


def test_fixed_delay_counts_failures_however_far_apart():
    strategy = FixedDelayRestart(2, 1.0)
    assert [strategy.on_failure(t) for t in (0.0, 1e6, 2e6)] == [1.0, 1.0, None]


def test_failure_rate_gives_up_when_too_many_failures_fall_within_the_interval():
    strategy = FailureRateRestart(2, 10.0, 0.5)
    assert strategy.on_failure(0.0) == 0.5
    assert strategy.on_failure(5.0) == 0.5
    assert strategy.on_failure(9.0) is None  # three failures within 10 s


def test_failure_rate_counts_only_failures_within_the_interval():
    strategy = FailureRateRestart(max_failures_per_interval=2, interval_s=10.0, delay_s=1.0)
    # at 11, the failure at 0 is older than the interval: only 5 and 11 count
    assert [strategy.on_failure(t) for t in (0.0, 5.0, 11.0)] == [1.0, 1.0, 1.0]
    assert strategy.on_failure(14.0) is None  # 5, 11, 14


def test_failure_rate_restarts_forever_when_failures_are_spaced_out():
    strategy = FailureRateRestart(1, 10.0, 1.0)
    assert all(strategy.on_failure(t * 10.5) == 1.0 for t in range(50))


def test_exponential_delay_grows_by_the_multiplier_up_to_the_max():
    strategy = ExponentialDelayRestart(
        initial_backoff_s=1.0, max_backoff_s=10.0, multiplier=2.0, jitter_factor=0.0
    )
    delays = [strategy.on_failure(float(t)) for t in range(7)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


def test_exponential_delay_of_pyflinks_configuration_takes_milliseconds():
    strategy = RestartStrategies.exponential_delay_restart(
        initial_backoff=500, max_backoff=1000, backoff_multiplier=3.0, jitter_factor=0.0
    ).create()
    assert [strategy.on_failure(float(t)) for t in range(3)] == [0.5, 1.0, 1.0]


def test_exponential_delay_resets_after_a_quiet_period_since_the_last_failure():
    strategy = ExponentialDelayRestart(
        1.0, 60.0, 2.0, reset_backoff_threshold_s=100.0, jitter_factor=0
    )
    assert [strategy.on_failure(t) for t in (0.0, 50.0, 120.0)] == [1.0, 2.0, 4.0]
    # 99.5 s after the last failure is not quiet enough; 100 s is
    assert strategy.on_failure(219.5) == 8.0
    assert strategy.on_failure(319.5) == 1.0
    assert strategy.on_failure(320.0) == 2.0


def test_exponential_delay_gives_up_after_the_attempts_before_reset():
    strategy = ExponentialDelayRestart(1.0, 60.0, 2.0, jitter_factor=0.0, attempts_before_reset=2)
    assert [strategy.on_failure(float(t)) for t in range(3)] == [1.0, 2.0, None]


@given(seed=st.integers(0, 2**32 - 1), jitter=st.sampled_from([0.1, 0.25, 0.5, 1.0]))
def test_exponential_delay_jitter_stays_within_the_factor(seed, jitter):
    jittered = ExponentialDelayRestart(
        0.5, 30.0, 1.5, jitter_factor=jitter, rng=random.Random(seed)
    )
    plain = ExponentialDelayRestart(0.5, 30.0, 1.5, jitter_factor=0.0)
    deviations = []
    for t in range(15):
        base = plain.on_failure(float(t))
        delay = jittered.on_failure(float(t))
        assert delay >= 0.0
        assert base * (1 - jitter) - 1e-9 <= delay <= base * (1 + jitter) + 1e-9
        deviations.append(delay - base)
    assert any(d != 0 for d in deviations)  # jitter is applied


def test_exponential_delay_jitter_is_reproducible_with_a_seeded_random():
    def delays(seed):
        s = ExponentialDelayRestart(1.0, 60.0, 2.0, jitter_factor=0.3, rng=random.Random(seed))
        return [s.on_failure(float(t)) for t in range(6)]

    assert delays(7) == delays(7)
    assert delays(7) != delays(8)


@pytest.mark.parametrize(
    ("strategy", "text"),
    [
        (FixedDelayRestart(3, 2.0), "3 attempts"),
        (FailureRateRestart(2, 60.0, 1.0), "2 per 60 s"),
        (ExponentialDelayRestart(1.0, 60.0, 1.5), "x1.5"),
    ],
)
def test_restart_strategies_describe_themselves(strategy, text):
    assert text in strategy.description
