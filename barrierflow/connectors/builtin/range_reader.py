"""Ranges of positions (``NumberSequenceSource``'s numbers, ``from_collection``'s indexes): a split
``RangeSplit(next, end)`` is read from ``next`` on, one split at a time, and its position is its
next. Performs no I/O."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import msgspec

from barrierflow.connectors.base.sequential_split_reader import SequentialSplitReader
from barrierflow.protocol.source_backlog import SourceBacklog


class RangeSplit(msgspec.Struct, frozen=True):
    """The positions ``next`` to ``end``: ``end`` is the last (``NumberSequenceSource``) or the one
    past it (``CollectionSource``), as its reader knows."""

    next: int
    end: int

    @property
    def split_id(self) -> str:
        return f"to-{self.end}"


def even_ranges(start: int, count: int, parallelism: int) -> list[tuple[int, int]]:
    """``count`` positions from ``start`` in one range per subtask (as even as they go), as
    (first, past the last); none empty."""
    bounds = [start + s * count // parallelism for s in range(parallelism + 1)]
    return [(lo, hi) for lo, hi in pairwise(bounds) if lo < hi]


class RangeReader(SequentialSplitReader[RangeSplit]):
    """``values(lo, hi)``: the records of positions ``lo`` to ``hi`` (exclusive);
    ``inclusive_end``: whether a split's ``end`` is its last position or the one past it. Its
    splits are pushed to it: it never asks for one."""

    def __init__(self, values: Callable[[int, int], list[Any]], inclusive_end: bool) -> None:
        super().__init__(None)
        self._values = values
        self._past_end = 1 if inclusive_end else 0
        self._read = 0

    def _open_split(self, split: RangeSplit) -> None:
        pass  # a position is all there is to open

    def _read_split(
        self, split: RangeSplit, max_records: int
    ) -> tuple[list[Any], RangeSplit, bool]:
        end = split.end + self._past_end
        hi = min(end, split.next + max_records)
        self._read += hi - split.next
        return self._values(split.next, hi), RangeSplit(hi, split.end), hi >= end

    def _close_split(self) -> None:
        pass

    def backlog(self) -> SourceBacklog | None:
        """The positions of its splits not read yet: known exactly, once it has its splits
        (before, the enumerator holds them)."""
        if not self._unfinished() and not self._no_more:
            return None
        pending = sum(s.end + self._past_end - s.next for s in self._unfinished().values())
        return SourceBacklog("unread records", pending, self._read)
