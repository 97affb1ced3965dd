"""NumberSequenceSource: PyFlink's source of the longs ``start..end`` (both inclusive), on
``SequenceSource``: Java's bounds (64-bit longs, ``start <= end``) and Java's parallel split,
one sub-sequence per subtask, each produced in order. Performs no I/O."""

from __future__ import annotations

from barrierflow.connectors.builtin.range_reader import RangeSplit
from barrierflow.connectors.builtin.sequence_source import SequenceSource

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class NumberSequenceSource(SequenceSource):
    """Bounded, whatever its length; at parallelism 1 the whole sequence in order."""

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
        super().__init__(start, end)

    def splits(self, parallelism: int) -> list[RangeSplit]:
        """As Java's ``NumberSequenceIterator.split``: ``size // parallelism`` numbers per
        sub-sequence, the first ``size % parallelism`` one more; empty ones are left out (a
        reader given none reads nothing, as Java's reads an empty split)."""
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

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"
