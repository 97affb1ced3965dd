"""The accumulators of aligned event-time windows (tumbling and sliding), kept by window end:
the window operator's batch path for its most common case. Performs no I/O.

An aligned window's bounds follow from a record's timestamp by arithmetic, and every key's
window with the same end fires at the same watermark. So instead of one window object, one
state access and one timer per record and key, the accumulators live in one dict per window
end (key -> accumulator, in the order the keys entered the window) and the only timer is the
end itself: a watermark fires the ends it passed, earliest first, each one's keys in order.
That is the order in which the general path's timers fire, since its timers of one time fire
in the order they were registered, and a key registers its window's timer with its first record
in it.

The operator copies the accumulators into its keyed state at each snapshot
(``runtime/window_state.py``), in the layout of the general path, so that snapshots, rescaling
and savepoints work as for all keyed state (docs/adr/0021-aligned-window-batch-path.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.state.key_groups import as_key, unwrapped
from barrierflow.windowing.window_assigners import (
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowAssigner,
)
from barrierflow.windowing.windows import TimeWindow


@dataclass(frozen=True)
class AlignedWindows:
    """Windows of ``size`` ms starting every ``slide`` ms, aligned to the epoch plus ``offset``
    (tumbling: ``slide == size``)."""

    size: int
    slide: int
    offset: int

    @staticmethod
    def of(assigner: WindowAssigner[Any, Any]) -> AlignedWindows | None:
        """The grid of an event-time tumbling or sliding assigner; None for any other, a
        subclass included (it may assign windows its own way)."""
        if type(assigner) is TumblingEventTimeWindows:
            return AlignedWindows(assigner.size, assigner.size, assigner.offset)
        if type(assigner) is SlidingEventTimeWindows:
            return AlignedWindows(assigner.size, assigner.slide, assigner.offset)
        return None

    def holds(self, window: Any) -> bool:
        """Whether ``window`` is one of this grid's (a restored window may not be)."""
        return (
            type(window) is TimeWindow
            and window.end - window.start == self.size
            and (window.start - self.offset) % self.slide == 0
        )


class AccumulateFailed(Exception):
    """A record could not be added, or a window's result made: the key selector or the
    function raised (``__cause__``). ``record`` is the record, or a description of the
    window."""

    def __init__(self, record: Any, key: Any) -> None:
        super().__init__(record, key)
        self.record, self.key = record, key


@dataclass(frozen=True)
class Folding:
    """How a window's records become its result: ``first(record)`` is a window's first
    accumulator, ``fold(accumulator, record)`` the next, ``result(accumulator)`` what the window
    emits. Two functions instead of one that tests for a first accumulator: a reduce function
    is then ``fold`` itself, one call per record."""

    first: Callable[[Any], Any]
    fold: Callable[[Any, Any], Any]
    result: Callable[[Any], Any]


class AlignedWindowAccumulators:
    """Per window end, each key's accumulator (``folding``'s). ``timestamp_missing(record)``
    raises the assigner's error for a record without a timestamp."""

    def __init__(
        self,
        windows: AlignedWindows,
        select: Callable[[Any], Any],
        folding: Folding,
        timestamp_missing: Callable[[Any], object],  # raises: its result is not used
    ) -> None:
        self.windows = windows
        # the user's own selector: a list key is made a key in the loops, not by a wrapper's
        # call per record (``hashable_keys``)
        self._select, self._folding = unwrapped(select), folding
        self._timestamp_missing = timestamp_missing
        self._open: dict[int, dict[Any, Any]] = {}  # window end -> key -> accumulator

    def __len__(self) -> int:
        """How many (key, window) accumulators are open."""
        return sum(map(len, self._open.values()))

    def add_batch(self, records: list[Any], timestamps: list[int], watermark: int) -> int:
        """Folds each record into its windows that the watermark has not passed; returns how
        many records were late (every window of theirs passed)."""
        if self.windows.slide == self.windows.size:
            return self._add_tumbling(records, timestamps, watermark)
        return self._add_sliding(records, timestamps, watermark)

    def _add_tumbling(self, records: list[Any], timestamps: list[int], watermark: int) -> int:
        select, size = self._select, self.windows.size
        first, fold = self._folding.first, self._folding.fold
        offset, open_ = self.windows.offset, self._open
        late = 0
        last_end: int | None = None
        contents: dict[Any, Any] = {}
        record = key = None
        try:
            for record, timestamp in zip(records, timestamps, strict=True):
                key = select(record)
                if key.__class__ is list:  # a list key, made a key here (``unwrapped``)
                    key = as_key(key)
                if timestamp == NO_TIMESTAMP:
                    self._timestamp_missing(record)
                end = timestamp - (timestamp - offset) % size + size
                if end != last_end:  # records of one window come in runs
                    if end <= watermark + 1:
                        late += 1
                        continue
                    opened = open_.get(end)
                    if opened is None:
                        opened = open_[end] = {}
                    contents, last_end = opened, end
                accumulator = contents.get(key)
                contents[key] = first(record) if accumulator is None else fold(accumulator, record)
        except Exception as e:
            raise AccumulateFailed(record, key) from e
        return late

    def _add_sliding(self, records: list[Any], timestamps: list[int], watermark: int) -> int:
        select, size = self._select, self.windows.size
        first, fold = self._folding.first, self._folding.fold
        slide, offset, open_ = self.windows.slide, self.windows.offset, self._open
        late = 0
        record = key = None
        try:
            for record, timestamp in zip(records, timestamps, strict=True):
                key = select(record)
                if key.__class__ is list:  # a list key, made a key here (``unwrapped``)
                    key = as_key(key)
                if timestamp == NO_TIMESTAMP:
                    self._timestamp_missing(record)
                last_end = timestamp - (timestamp - offset) % slide + size
                accepted = False
                for end in range(last_end, timestamp, -slide):
                    if end <= watermark + 1:
                        continue
                    accepted = True
                    contents = open_.get(end)
                    if contents is None:
                        contents = open_[end] = {}
                    accumulator = contents.get(key)
                    contents[key] = (
                        first(record) if accumulator is None else fold(accumulator, record)
                    )
                if not accepted:
                    late += 1
        except Exception as e:
            raise AccumulateFailed(record, key) from e
        return late

    def fire(self, watermark: int) -> tuple[list[Any], list[int]]:
        """The results of the windows whose end the watermark passed, earliest end first, with
        their windows' last moment as timestamps; those windows are gone afterwards. A
        window's accumulator that is None (a reduce function returned None) emits nothing."""
        out: list[Any] = []
        out_ts: list[int] = []
        emit, result = out.append, self._folding.result
        for end in sorted(e for e in self._open if e <= watermark + 1):
            key = None
            try:
                for key, accumulator in self._open.pop(end).items():  # noqa: B007 - in the error
                    if accumulator is not None:
                        emit(result(accumulator))
            except Exception as e:
                window = TimeWindow(end - self.windows.size, end)
                raise AccumulateFailed(f"<timer at {end - 1} of window {window}>", key) from e
            out_ts.extend([end - 1] * (len(out) - len(out_ts)))
        return out, out_ts

    # --- state ------------------------------------------------------------------------------

    def open_windows(self) -> Iterator[tuple[TimeWindow, dict[Any, Any]]]:
        """Each open window, by end, with its keys' accumulators (not to be changed)."""
        size = self.windows.size
        for end in sorted(self._open):
            yield TimeWindow(end - size, end), self._open[end]

    def restore(self, entries: Iterable[tuple[Any, TimeWindow, Any]]) -> None:
        """Adds (key, window, accumulator) entries, in the order their timers were restored:
        a window's keys then fire in that order, as the general path's restored timers do."""
        for key, window, accumulator in entries:
            if not self.windows.holds(window):
                raise ValueError(f"window {window} is not one of {self.windows}")
            self._open.setdefault(window.end, {})[key] = accumulator
