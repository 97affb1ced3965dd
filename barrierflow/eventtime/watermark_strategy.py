"""Watermark strategies as PyFlink programs declare them, and the generators they make: one
per source split, fed every record's timestamp and asked for a watermark periodically
(``pipeline.auto-watermark-interval``).

A generator is plain logic: it is given the time rather than reading a clock, so its rules are
tested without waiting. Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.eventtime.durations import Duration, millis_of
from barrierflow.eventtime.watermark_valve import MIN_WATERMARK


class TimestampAssigner:
    """Extracts a record's event timestamp, in epoch milliseconds. Subclass it, or pass a
    function of ``(value, record_timestamp)`` to ``with_timestamp_assigner``."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise NotImplementedError


class WatermarkGenerator:
    """Bounded out-of-orderness (Flink's ``BoundedOutOfOrdernessWatermarks``): the watermark
    trails the highest timestamp seen by the bound, minus one, so a record at exactly the bound
    is still on time. Monotonous timestamps are a bound of zero."""

    def __init__(self, out_of_orderness_ms: int, idle_timeout_ms: int | None) -> None:
        self._bound = out_of_orderness_ms
        self._highest = MIN_WATERMARK + out_of_orderness_ms + 1
        self._idle_timeout_ms = idle_timeout_ms
        self._last_event_ms: int | None = None
        self._idle = False

    @property
    def idle(self) -> bool:
        return self._idle

    def on_event(self, timestamp: int, now_ms: int) -> bool:
        """Takes a record's timestamp; True if the split was idle until now."""
        if timestamp > self._highest:
            self._highest = timestamp
        self._last_event_ms = now_ms
        was_idle, self._idle = self._idle, False
        return was_idle

    def on_periodic_emit(self, now_ms: int) -> int:
        """The current watermark; marks the split idle once it had no record for the idle
        timeout (the caller tells downstream)."""
        if self._idle_timeout_ms is not None:
            if self._last_event_ms is None:
                self._last_event_ms = now_ms  # the timeout counts from the start
            elif now_ms - self._last_event_ms >= self._idle_timeout_ms:
                self._idle = True
        return self._highest - self._bound - 1


class WatermarkStrategy:
    """How a source's records get timestamps and watermarks. Immutable: every ``with_*``
    returns a new strategy, so one strategy can be shared by several sources."""

    def __init__(
        self,
        out_of_orderness_ms: int | None,
        timestamp_assigner: TimestampAssigner | Callable[[Any, int], int] | None = None,
        idle_timeout_ms: int | None = None,
    ) -> None:
        self.out_of_orderness_ms = out_of_orderness_ms  # None: no watermarks at all
        self.timestamp_assigner = timestamp_assigner
        self.idle_timeout_ms = idle_timeout_ms

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(0)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        bound = millis_of(max_out_of_orderness, "for_bounded_out_of_orderness")
        if bound < 0:
            raise ValueError(f"the out-of-orderness bound must not be negative, not {bound} ms")
        return WatermarkStrategy(bound)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(None)

    def with_timestamp_assigner(
        self, assigner: TimestampAssigner | Callable[[Any, int], int]
    ) -> WatermarkStrategy:
        if not (isinstance(assigner, TimestampAssigner) or callable(assigner)):
            raise TypeError(
                "with_timestamp_assigner takes a TimestampAssigner or a function "
                f"(value, record_timestamp) -> int, not {type(assigner).__name__}"
            )
        return WatermarkStrategy(self.out_of_orderness_ms, assigner, self.idle_timeout_ms)

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        timeout = millis_of(idle_timeout, "with_idleness")
        if timeout <= 0:
            raise ValueError(f"the idle timeout must be positive, not {timeout} ms")
        return WatermarkStrategy(self.out_of_orderness_ms, self.timestamp_assigner, timeout)

    @property
    def generates_watermarks(self) -> bool:
        return self.out_of_orderness_ms is not None

    def create_generator(self) -> WatermarkGenerator | None:
        """A generator for one split; None for ``no_watermarks``."""
        if self.out_of_orderness_ms is None:
            return None
        return WatermarkGenerator(self.out_of_orderness_ms, self.idle_timeout_ms)

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The record's event timestamp by the assigner; without one, the timestamp it had."""
        assigner = self.timestamp_assigner
        if assigner is None:
            return record_timestamp
        if isinstance(assigner, TimestampAssigner):
            return assigner.extract_timestamp(value, record_timestamp)
        return assigner(value, record_timestamp)
