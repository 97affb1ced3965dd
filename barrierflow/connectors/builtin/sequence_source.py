"""SequenceSource: the integers ``start..end`` (inclusive), in one range per subtask. Performs no
I/O."""

from __future__ import annotations

from barrierflow.connectors.base.static_split_source import StaticSplitSource
from barrierflow.connectors.builtin.range_reader import RangeReader, RangeSplit, even_ranges
from barrierflow.connectors.interfaces.source import SourceReaderContext


class SequenceSource(StaticSplitSource):
    split_type = RangeSplit

    def __init__(self, start: int, end: int) -> None:
        if not (isinstance(start, int) and isinstance(end, int)) or end < start:
            raise ValueError(f"SequenceSource needs integers start <= end, got {start!r}, {end!r}")
        self.start = start
        self.end = end

    def splits(self, parallelism: int) -> list[RangeSplit]:
        """One range per subtask, ``next`` its next number, ``end`` its last (inclusive)."""
        ranges = even_ranges(self.start, self.end - self.start + 1, parallelism)
        return [RangeSplit(lo, hi - 1) for lo, hi in ranges]

    def create_reader(self, context: SourceReaderContext) -> RangeReader:
        return RangeReader(lambda lo, hi: list(range(lo, hi)), inclusive_end=True)

    def __repr__(self) -> str:
        return f"SequenceSource({self.start}, {self.end})"
