"""PyFlink's ``RestartStrategies``: ``env.set_restart_strategy(RestartStrategies.no_restart())``.

Each factory returns a configuration, a frozen value as PyFlink's, that makes a fresh
barrierflow restart strategy (``cluster/restart_strategy.py``) for each job it is set on, so a
second ``execute()`` starts with no failures counted. Delays are milliseconds or a
``timedelta``, as PyFlink takes them. Performs no I/O.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from barrierflow.cluster.restart_strategy import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    NoRestart,
    RestartStrategy,
)

Delay = int | datetime.timedelta


def _millis(value: Delay, what: str) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} is milliseconds (an int >= 0) or a timedelta, not {value!r}")
    return value


class RestartStrategyConfiguration:
    """What ``set_restart_strategy`` takes; ``create()`` makes the strategy a job uses
    (None: the configuration's ``restart-strategy.*`` decides)."""

    def create(self) -> RestartStrategy | None:
        raise NotImplementedError

    def get_description(self) -> str:
        strategy = self.create()
        return "the configured restart strategy" if strategy is None else strategy.description


class RestartStrategies:
    @dataclass(frozen=True)
    class NoRestartStrategyConfiguration(RestartStrategyConfiguration):
        def create(self) -> RestartStrategy:
            return NoRestart()

    @dataclass(frozen=True)
    class FallbackRestartStrategyConfiguration(RestartStrategyConfiguration):
        """The ``restart-strategy.*`` configuration decides (Flink's cluster-wide one)."""

        def create(self) -> None:
            return None

    @dataclass(frozen=True)
    class FixedDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        restart_attempts: int
        delay_ms: int

        def get_restart_attempts(self) -> int:
            return self.restart_attempts

        def get_delay_between_attempts_interval(self) -> datetime.timedelta:
            return datetime.timedelta(milliseconds=self.delay_ms)

        def create(self) -> RestartStrategy:
            return FixedDelayRestart(self.restart_attempts, self.delay_ms / 1000)

    @dataclass(frozen=True)
    class FailureRateRestartStrategyConfiguration(RestartStrategyConfiguration):
        max_failure_rate: int
        failure_interval_ms: int
        delay_ms: int

        def get_max_failure_rate(self) -> int:
            return self.max_failure_rate

        def get_failure_interval(self) -> datetime.timedelta:
            return datetime.timedelta(milliseconds=self.failure_interval_ms)

        def get_delay_between_attempts_interval(self) -> datetime.timedelta:
            return datetime.timedelta(milliseconds=self.delay_ms)

        def create(self) -> RestartStrategy:
            return FailureRateRestart(
                self.max_failure_rate, self.failure_interval_ms / 1000, self.delay_ms / 1000
            )

    @dataclass(frozen=True)
    class ExponentialDelayRestartStrategyConfiguration(RestartStrategyConfiguration):
        initial_backoff_ms: int
        max_backoff_ms: int
        backoff_multiplier: float
        reset_backoff_threshold_ms: int
        jitter_factor: float

        def create(self) -> RestartStrategy:
            return ExponentialDelayRestart(
                self.initial_backoff_ms / 1000,
                self.max_backoff_ms / 1000,
                self.backoff_multiplier,
                self.reset_backoff_threshold_ms / 1000,
                self.jitter_factor,
            )

    @staticmethod
    def no_restart() -> RestartStrategies.NoRestartStrategyConfiguration:
        return RestartStrategies.NoRestartStrategyConfiguration()

    @staticmethod
    def fall_back_restart() -> RestartStrategies.FallbackRestartStrategyConfiguration:
        return RestartStrategies.FallbackRestartStrategyConfiguration()

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: Delay
    ) -> RestartStrategies.FixedDelayRestartStrategyConfiguration:
        if isinstance(restart_attempts, bool) or not isinstance(restart_attempts, int):
            raise ValueError(f"restart_attempts must be an int, not {restart_attempts!r}")
        return RestartStrategies.FixedDelayRestartStrategyConfiguration(
            restart_attempts, _millis(delay_between_attempts, "delay_between_attempts")
        )

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: Delay, delay_interval: Delay
    ) -> RestartStrategies.FailureRateRestartStrategyConfiguration:
        if isinstance(failure_rate, bool) or not isinstance(failure_rate, int):
            raise ValueError(f"failure_rate must be an int, not {failure_rate!r}")
        return RestartStrategies.FailureRateRestartStrategyConfiguration(
            failure_rate,
            _millis(failure_interval, "failure_interval"),
            _millis(delay_interval, "delay_interval"),
        )

    @staticmethod
    def exponential_delay_restart(
        initial_backoff: Delay = 1000,
        max_backoff: Delay = 60000,
        backoff_multiplier: float = 1.5,
        reset_backoff_threshold: Delay = 3600000,
        jitter_factor: float = 0.1,
    ) -> RestartStrategies.ExponentialDelayRestartStrategyConfiguration:
        """Flink's exponential-delay strategy (not in PyFlink's factories; its configuration
        keys ``restart-strategy.exponential-delay.*`` are)."""
        return RestartStrategies.ExponentialDelayRestartStrategyConfiguration(
            _millis(initial_backoff, "initial_backoff"),
            _millis(max_backoff, "max_backoff"),
            backoff_multiplier,
            _millis(reset_backoff_threshold, "reset_backoff_threshold"),
            jitter_factor,
        )
