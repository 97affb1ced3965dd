"""User metrics, PyFlink-style: ``runtime_context.get_metrics_group().counter("seen")``.

A function's counters, meters, gauges and distributions live in its subtask's registry; the
slot's heartbeat samples them with the subtask's own counters and the JobMaster serves them at
``/metrics`` (Prometheus), scoped by job, vertex, subtask and operator, as Flink's reporters
scope them. Updating one is an addition on the task thread; sampling reads it from the slot's
thread without a lock (one Python number each, atomic under the GIL), and calls gauges there.
Performs no I/O (a failing gauge is logged).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Counter", "Distribution", "Meter", "MetricGroup"]


_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
M = TypeVar("M")
log = logging.getLogger("barrierflow.metrics")


class Counter:
    __slots__ = ("_count",)

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        self._count += n

    def dec(self, n: int = 1) -> None:
        self._count -= n

    def get_count(self) -> int:
        return self._count


class Meter:
    """Events and their rate per second over the last ``time_span_in_seconds``."""

    __slots__ = ("_count", "_history", "_span_s")

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        self._count = 0
        self._span_s = time_span_in_seconds
        self._history: list[tuple[float, int]] = []  # (when, count) per sample, within span

    def mark_event(self, n: int = 1) -> None:
        self._count += n

    def get_count(self) -> int:
        return self._count

    def get_rate(self, now: float | None = None) -> float:
        """Events per second since the oldest sample within the span (0 before two)."""
        now = time.monotonic() if now is None else now
        history = self._history
        history.append((now, self._count))
        while len(history) > 2 and history[1][0] <= now - self._span_s:
            history.pop(0)
        (t0, c0), (t1, c1) = history[0], history[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


class Distribution:
    """Count, sum, min and max of the values given to ``update``."""

    __slots__ = ("count", "max", "min", "sum")

    def __init__(self) -> None:
        self.count, self.sum, self.min, self.max = 0, 0.0, math.inf, -math.inf

    def update(self, value: float) -> None:
        self.count += 1
        self.sum += value
        self.min = min(self.min, value)
        self.max = max(self.max, value)


class MetricGroup:
    """The metrics of one operator (``add_group`` nests names: ``group.name``)."""

    def __init__(self, registry: MetricRegistry, operator: str, prefix: str = "") -> None:
        self._registry = registry
        self._operator = operator
        self._prefix = prefix

    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """A sub-group; with ``extra``, a key group ``name.extra`` as Flink's."""
        path = self._checked(name) + (f".{self._checked(extra)}" if extra is not None else "")
        return MetricGroup(self._registry, self._operator, path + ".")

    def counter(self, name: str) -> Counter:
        return self._registry.register(self._operator, self._checked(name), Counter())

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        return self._registry.register(
            self._operator, self._checked(name), Meter(time_span_in_seconds)
        )

    def gauge(self, name: str, obj: Callable[[], float]) -> Callable[[], float]:
        if not callable(obj):
            raise TypeError(f"gauge {name!r} needs a function returning a number, got {obj!r}")
        return self._registry.register(self._operator, self._checked(name), obj)

    def distribution(self, name: str) -> Distribution:
        return self._registry.register(self._operator, self._checked(name), Distribution())

    def _checked(self, name: str) -> str:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"a metric or group name is letters, digits, '_', '.' or '-', got {name!r}"
            )
        return self._prefix + name


class MetricRegistry:
    """The user metrics of one subtask, by operator and name."""

    def __init__(self) -> None:
        self._metrics: dict[tuple[str, str], object] = {}
        self._failed: set[tuple[str, str]] = set()  # gauges whose failure was logged

    def group(self, operator: str) -> MetricGroup:
        return MetricGroup(self, operator)

    def register(self, operator: str, name: str, metric: M) -> M:
        """Registering a name again returns the metric it has (a restarted function's
        ``open`` asks again), if of the same kind."""
        have = self._metrics.setdefault((operator, name), metric)
        if type(have) is not type(metric) and not (callable(have) and callable(metric)):
            raise ValueError(f"metric {name!r} of operator {operator!r} is already registered")
        return have

    def sample(self) -> list[tuple[str, str, float]]:
        """(operator, name, value) of every metric: counters and meters their count, meters
        also ``<name>.rate``, gauges their value, distributions ``.count/.sum/.min/.max``."""
        out: list[tuple[str, str, float]] = []
        for (operator, name), metric in list(self._metrics.items()):
            if isinstance(metric, Counter):
                out.append((operator, name, float(metric.get_count())))
            elif isinstance(metric, Meter):
                out.append((operator, name, float(metric.get_count())))
                out.append((operator, name + ".rate", metric.get_rate()))
            elif isinstance(metric, Distribution):
                if metric.count:
                    for part in ("count", "sum", "min", "max"):
                        out.append((operator, f"{name}.{part}", float(getattr(metric, part))))
            else:
                try:
                    out.append((operator, name, float(metric())))
                except Exception as e:  # noqa: BLE001 - user code: any error, reported once
                    if (operator, name) not in self._failed:
                        self._failed.add((operator, name))
                        log.warning("gauge %r of %s fails, not reported: %r", name, operator, e)
        return out
