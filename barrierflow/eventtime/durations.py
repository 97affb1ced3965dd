"""``Duration`` and ``Time``, as PyFlink programs write them (``Duration.of_seconds(5)``,
``Time.minutes(1)``), both a whole number of milliseconds, and ``Instant``, a point in time
(PyFlink's ``pyflink.common.time``). Performs no I/O."""

from __future__ import annotations

from dataclasses import dataclass


def _millis(amount: float, unit_ms: int, what: str) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        raise TypeError(f"{what} takes a number, not {type(amount).__name__} {amount!r}")
    return round(amount * unit_ms)


@dataclass(frozen=True, order=True)
class Duration:
    """A length of time, for watermark out-of-orderness, idleness and intervals."""

    millis: int

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(_millis(millis, 1, "Duration.of_millis"))

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        """Whole milliseconds: a Duration here is a number of them (sub-millisecond parts,
        which no timer or watermark of Flink's sees either, are dropped)."""
        return Duration(_millis(nanos, 1, "Duration.of_nanos") // 1_000_000)

    @staticmethod
    def of_seconds(seconds: float) -> Duration:
        return Duration(_millis(seconds, 1_000, "Duration.of_seconds"))

    @staticmethod
    def of_minutes(minutes: float) -> Duration:
        return Duration(_millis(minutes, 60_000, "Duration.of_minutes"))

    @staticmethod
    def of_hours(hours: float) -> Duration:
        return Duration(_millis(hours, 3_600_000, "Duration.of_hours"))

    @staticmethod
    def of_days(days: float) -> Duration:
        return Duration(_millis(days, 86_400_000, "Duration.of_days"))

    def to_milliseconds(self) -> int:
        return self.millis


@dataclass(frozen=True, order=True)
class Time:
    """A window size, slide, gap or lateness."""

    millis: int

    @staticmethod
    def milliseconds(millis: int) -> Time:
        return Time(_millis(millis, 1, "Time.milliseconds"))

    @staticmethod
    def seconds(seconds: float) -> Time:
        return Time(_millis(seconds, 1_000, "Time.seconds"))

    @staticmethod
    def minutes(minutes: float) -> Time:
        return Time(_millis(minutes, 60_000, "Time.minutes"))

    @staticmethod
    def hours(hours: float) -> Time:
        return Time(_millis(hours, 3_600_000, "Time.hours"))

    @staticmethod
    def days(days: float) -> Time:
        return Time(_millis(days, 86_400_000, "Time.days"))

    def to_milliseconds(self) -> int:
        return self.millis


@dataclass(frozen=True, order=True)
class Instant:
    """A point in time as Java's ``Instant``: seconds since the epoch and nanoseconds within
    the second (0 to 999,999,999, also for instants before the epoch)."""

    seconds: int
    nanos: int

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        seconds, millis = divmod(epoch_milli, 1000)
        return Instant(seconds, millis * 1_000_000)

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


def millis_of(value: Duration | Time | int, what: str) -> int:
    """Milliseconds of a ``Duration``, a ``Time`` or a plain number of milliseconds (PyFlink
    takes either in places); a clear error for anything else."""
    if isinstance(value, Duration | Time):
        return value.millis
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(
        f"{what} takes a Duration, a Time or milliseconds, not {type(value).__name__} {value!r}"
    )
