"""``env.from_collection(values)``: a bounded source of Python values shipped with the job.

The values are split into contiguous ranges, one per source subtask; a split's position is the
index of its next value, kept in the checkpoint like ``SequenceSource``'s, so a restore (also at
another parallelism) rewinds to exactly the values not yet covered by the checkpoint. Performs
no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrierflow.connectors.source import SourceReaderContext


class CollectionSource:
    def __init__(self, values: Iterable[Any]) -> None:
        if isinstance(values, str | bytes | dict) or not isinstance(values, Iterable):
            raise TypeError(
                "from_collection() takes a list (or another iterable) of values, not "
                f"{type(values).__name__} {values!r:.100}"
            )
        self.values = list(values)

    def is_bounded(self) -> bool:
        return True

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        n = len(self.values)
        lo = subtask * n // parallelism
        hi = (subtask + 1) * n // parallelism
        return [{"next": lo, "end": hi}] if lo < hi else []

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> _CollectionReader:
        return _CollectionReader(self.values, [dict(s) for s in splits])

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.values)} values)"


class _CollectionReader:
    def __init__(self, values: list[Any], splits: list[dict]) -> None:
        self._values = values
        self._splits = splits
        self._last: list[tuple[str, int]] = []
        self._finished: list[str] = []

    def poll(self, max_records: int) -> list[Any] | None:
        for split in self._splits:
            if split["next"] < split["end"]:
                at = split["next"]
                upto = min(split["end"], at + max_records)
                split["next"] = upto
                self._last = [(f"to-{split['end']}", upto - at)]
                if upto == split["end"]:
                    self._finished.append(f"to-{split['end']}")
                return self._values[at:upto]
        return None

    def last_poll_splits(self) -> list[tuple[str, int]]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot(self) -> list[dict]:
        return [dict(s) for s in self._splits]

    def close(self) -> None:
        pass
