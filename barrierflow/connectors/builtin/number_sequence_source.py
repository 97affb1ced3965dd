"""NumberSequenceSource: PyFlink's source of the longs ``start..end`` (both inclusive), with
Java's bounds (64-bit longs, ``start <= end``) and Java's parallel split, one sub-sequence per
subtask, each produced in order. ``SequenceSource``, barrierflow's name for it before, is a
deprecated alias of it. Performs no I/O."""

from __future__ import annotations

from barrierflow.connectors.base.static_split_source import StaticSplitSource
from barrierflow.connectors.builtin.range_reader import RangeReader, RangeSplit
from barrierflow.connectors.interfaces.source import SourceReaderContext

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class NumberSequenceSource(StaticSplitSource):
    """Bounded, whatever its length; at parallelism 1 the whole sequence in order."""

    split_type = RangeSplit

    def __init__(self, start: int, end: int) -> None:
        for what, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"NumberSequenceSource: {what} must be an int, got {value!r}")
            if not _LONG_MIN <= value <= _LONG_MAX:
                raise ValueError(
                    f"NumberSequenceSource: {what} = {value} is outside Java's long range "
                    f"[{_LONG_MIN}, {_LONG_MAX}], which PyFlink's source takes"
                )
        if start > end:
            raise ValueError(
                f"NumberSequenceSource: start ({start}) must be <= end ({end}); both are inclusive"
            )
        self.start = start
        self.end = end

    def splits(self, parallelism: int) -> list[RangeSplit]:
        """As Java's ``NumberSequenceIterator.split``: ``size // parallelism`` numbers per
        sub-sequence, the first ``size % parallelism`` one more; empty ones are left out (a
        reader given none reads nothing, as Java's reads an empty split). A split's ``next`` is
        its next number, its ``end`` its last."""
        size = self.end - self.start + 1
        per_split, extra = divmod(size, parallelism)
        splits: list[RangeSplit] = []
        first = self.start
        for s in range(parallelism):
            count = per_split + (1 if s < extra else 0)
            if count:
                splits.append(RangeSplit(first, first + count - 1))
            first += count
        return splits

    def create_reader(self, context: SourceReaderContext) -> RangeReader:
        return RangeReader(lambda lo, hi: list(range(lo, hi)), inclusive_end=True)

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"
