"""Restart strategies, as Flink's: decide whether and when a failed job restarts.

Each takes the failure time and returns the delay before the next attempt, or ``None`` to give
up. Holds no clock and sleeps nowhere. Performs no I/O.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol


class RestartStrategy(Protocol):
    def on_failure(self, now_s: float) -> float | None:
        """Delay in seconds before restarting, or None when the job must fail for good."""


@dataclass
class NoRestart:
    description: str = "no restarts"

    def on_failure(self, now_s: float) -> float | None:
        return None


@dataclass
class FixedDelayRestart:
    attempts: int
    delay_s: float
    _failures: int = 0

    @property
    def description(self) -> str:
        return f"fixed-delay ({self.attempts} attempts, {self.delay_s:g} s apart)"

    def on_failure(self, now_s: float) -> float | None:
        self._failures += 1
        return self.delay_s if self._failures <= self.attempts else None


@dataclass
class ExponentialDelayRestart:
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    multiplier: float = 1.5
    reset_backoff_threshold_s: float = 3600.0
    jitter_factor: float = 0.1
    attempts_before_reset: int = 2**31 - 1
    rng: random.Random = field(default_factory=random.Random)
    _backoff_s: float | None = None
    _last_failure_s: float | None = None
    _attempts: int = 0

    @property
    def description(self) -> str:
        return (
            f"exponential-delay ({self.initial_backoff_s:g} s to {self.max_backoff_s:g} s, "
            f"x{self.multiplier:g})"
        )

    def on_failure(self, now_s: float) -> float | None:
        quiet = self._last_failure_s is not None and (
            now_s - self._last_failure_s >= self.reset_backoff_threshold_s
        )
        if self._backoff_s is None or quiet:
            self._backoff_s, self._attempts = self.initial_backoff_s, 0
        else:
            self._backoff_s = min(self._backoff_s * self.multiplier, self.max_backoff_s)
        self._last_failure_s = now_s
        self._attempts += 1
        if self._attempts > self.attempts_before_reset:
            return None
        jitter = self._backoff_s * self.jitter_factor
        return max(0.0, self._backoff_s + self.rng.uniform(-jitter, jitter))


@dataclass
class FailureRateRestart:
    max_failures_per_interval: int
    interval_s: float
    delay_s: float
    _failures: deque = field(default_factory=deque)

    @property
    def description(self) -> str:
        return (
            f"failure-rate ({self.max_failures_per_interval} per {self.interval_s:g} s, "
            f"{self.delay_s:g} s apart)"
        )

    def on_failure(self, now_s: float) -> float | None:
        self._failures.append(now_s)
        while self._failures and self._failures[0] <= now_s - self.interval_s:
            self._failures.popleft()
        return self.delay_s if len(self._failures) <= self.max_failures_per_interval else None


_TYPE_ALIASES = {
    "disable": "none",
    "off": "none",
    "fixeddelay": "fixed-delay",
    "exponentialdelay": "exponential-delay",
    "failurerate": "failure-rate",
}


def from_configuration(conf, checkpointing: bool) -> RestartStrategy:
    """``restart-strategy.*`` options; Flink's default: exponential-delay with checkpointing,
    no restarts without."""
    kind = conf.get("restart-strategy.type")
    if kind is None:
        kind = "exponential-delay" if checkpointing else "none"
    kind = _TYPE_ALIASES.get(kind, kind)
    if kind == "none":
        return NoRestart()
    if kind == "fixed-delay":
        return FixedDelayRestart(
            conf.get("restart-strategy.fixed-delay.attempts"),
            conf.get("restart-strategy.fixed-delay.delay") / 1000,
        )
    if kind == "failure-rate":
        return FailureRateRestart(
            conf.get("restart-strategy.failure-rate.max-failures-per-interval"),
            conf.get("restart-strategy.failure-rate.failure-rate-interval") / 1000,
            conf.get("restart-strategy.failure-rate.delay") / 1000,
        )
    p = "restart-strategy.exponential-delay."
    return ExponentialDelayRestart(
        initial_backoff_s=conf.get(p + "initial-backoff") / 1000,
        max_backoff_s=conf.get(p + "max-backoff") / 1000,
        multiplier=conf.get(p + "backoff-multiplier"),
        reset_backoff_threshold_s=conf.get(p + "reset-backoff-threshold") / 1000,
        jitter_factor=conf.get(p + "jitter-factor"),
        attempts_before_reset=conf.get(p + "attempts-before-reset-backoff"),
    )
