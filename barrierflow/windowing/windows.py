"""The windows a record can fall into: a time window ``[start, end)`` or a count window.
Performs no I/O."""

from __future__ import annotations

from dataclasses import dataclass


class Window:
    """What a window assigner puts records into; ``max_timestamp`` is its last moment."""

    __slots__ = ()

    def max_timestamp(self) -> int:
        raise NotImplementedError


@dataclass(frozen=True, order=True, slots=True)
class TimeWindow(Window):
    """``[start, end)`` in milliseconds; its last moment, ``max_timestamp``, is ``end - 1``
    (an event-time window fires when the watermark reaches it)."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Overlapping or touching: session windows that meet merge."""
        return self.start <= other.end and other.start <= self.end

    def cover(self, other: TimeWindow) -> TimeWindow:
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """The start of the window of ``window_size`` (aligned to the epoch plus ``offset``)
        that holds ``timestamp``; right for negative timestamps too."""
        remainder = (timestamp - offset) % window_size
        return timestamp - remainder


@dataclass(frozen=True, order=True, slots=True)
class CountWindow(Window):
    """The ``id``-th window of a count window assigner; it has no time of its own."""

    id: int

    def max_timestamp(self) -> int:
        return 2**63 - 1


@dataclass(frozen=True, slots=True)
class GlobalWindow(Window):
    """The one window of ``GlobalWindows``: it never ends by itself; a trigger fires it."""

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return 2**63 - 1


def merge_time_windows(windows: list[TimeWindow]) -> list[tuple[TimeWindow, list[TimeWindow]]]:
    """Session windows that intersect, merged: each merged window with the windows it covers
    (those in ``windows``), in order of start. A window that merges with none is listed alone."""
    merged: list[tuple[TimeWindow, list[TimeWindow]]] = []
    for window in sorted(windows):
        if merged and merged[-1][0].intersects(window):
            cover, members = merged[-1]
            merged[-1] = (cover.cover(window), [*members, window])
        else:
            merged.append((window, [window]))
    return merged
