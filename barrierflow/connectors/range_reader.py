"""The reader of ranges of positions (``SequenceSource``'s numbers, ``from_collection``'s
indexes): a split ``{"next": n, "end": e}`` is read from ``n`` on, and its position is its next.
Performs no I/O."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from barrierflow.connectors.source_reader import SourceReader, SplitRun
from barrierflow.connectors.split_enumerator import Split


def even_ranges(start: int, count: int, parallelism: int) -> list[tuple[int, int]]:
    """``count`` positions from ``start`` in one range per subtask (as even as they go), as
    (first, past the last); none empty."""
    bounds = [start + s * count // parallelism for s in range(parallelism + 1)]
    return [(lo, hi) for lo, hi in pairwise(bounds) if lo < hi]


class RangeReader(SourceReader):
    """``values(lo, hi)``: the records of positions ``lo`` to ``hi`` (exclusive);
    ``inclusive_end``: whether a split's ``end`` is its last position or the one past it."""

    def __init__(self, values: Callable[[int, int], list[Any]], inclusive_end: bool) -> None:
        self._values = values
        self._past_end = 1 if inclusive_end else 0
        self._splits: list[Split] = []  # unfinished, in the order given
        self._no_more = False
        self._last: list[SplitRun] = []
        self._finished: list[str] = []

    def add_splits(self, splits: list[Split]) -> None:
        self._splits += [dict(s) for s in splits]

    def notify_no_more_splits(self) -> None:
        self._no_more = True

    def poll(self, max_records: int) -> list[Any] | None:
        while self._splits:
            split = self._splits[0]
            end = split["end"] + self._past_end
            lo = split["next"]
            hi = min(end, lo + max_records)
            split["next"] = hi
            if hi >= end:
                self._splits.pop(0)
                self._finished.append(_split_id(split))
            if lo < hi:
                self._last = [(_split_id(split), hi - lo)]
                return self._values(lo, hi)
        self._last = []
        return None if self._no_more else []

    def split_runs(self) -> list[SplitRun]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return [dict(s) for s in self._splits]


def _split_id(split: Split) -> str:
    return f"to-{split['end']}"
