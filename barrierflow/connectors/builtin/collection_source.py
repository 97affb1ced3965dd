"""``env.from_collection(values)``: a bounded source of Python values shipped with the job.

The values are split into contiguous ranges, one per source subtask; a split's position is the
index of its next value, kept in the checkpoint like ``NumberSequenceSource``'s, so a restore
(also at another parallelism) rewinds to exactly the values not yet covered by the checkpoint.
Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrierflow.connectors.base.static_split_source import StaticSplitSource
from barrierflow.connectors.builtin.range_reader import RangeReader, RangeSplit, even_ranges
from barrierflow.connectors.interfaces.source import SourceReaderContext


class CollectionSource(StaticSplitSource):
    split_type = RangeSplit

    def __init__(self, values: Iterable[Any]) -> None:
        if isinstance(values, str | bytes | dict) or not isinstance(values, Iterable):
            raise TypeError(
                "from_collection() takes a list (or another iterable) of values, not "
                f"{type(values).__name__} {values!r:.100}"
            )
        self.values = list(values)

    def splits(self, parallelism: int) -> list[RangeSplit]:
        """One range of indexes per subtask, ``next`` its next, ``end`` past its last."""
        ranges = even_ranges(0, len(self.values), parallelism)
        return [RangeSplit(lo, hi) for lo, hi in ranges]

    def create_reader(self, context: SourceReaderContext) -> RangeReader:
        return RangeReader(lambda lo, hi: self.values[lo:hi], inclusive_end=False)

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.values)} values)"
