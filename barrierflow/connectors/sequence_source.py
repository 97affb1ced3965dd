"""SequenceSource: the integers ``start..end`` (inclusive), split evenly across subtasks."""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.source import SourceReaderContext


class SequenceSource:
    def __init__(self, start: int, end: int) -> None:
        if not (isinstance(start, int) and isinstance(end, int)) or end < start:
            raise ValueError(f"SequenceSource needs integers start <= end, got {start!r}, {end!r}")
        self.start = start
        self.end = end

    def is_bounded(self) -> bool:
        return True

    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        n = self.end - self.start + 1
        lo = self.start + subtask * n // parallelism
        hi = self.start + (subtask + 1) * n // parallelism - 1
        return [{"next": lo, "end": hi}] if lo <= hi else []

    def create_reader(self, splits: list[dict], context: SourceReaderContext) -> _SequenceReader:
        return _SequenceReader([dict(s) for s in splits])

    def __repr__(self) -> str:
        return f"SequenceSource({self.start}, {self.end})"


class _SequenceReader:
    def __init__(self, splits: list[dict]) -> None:
        self._splits = splits
        self._last: list[tuple[str, int]] = []
        self._finished: list[str] = []

    def poll(self, max_records: int) -> list[Any] | None:
        for split in self._splits:
            if split["next"] <= split["end"]:
                lo = split["next"]
                hi = min(split["end"] + 1, lo + max_records)
                split["next"] = hi
                self._last = [(f"to-{split['end']}", hi - lo)]
                if hi > split["end"]:
                    self._finished.append(f"to-{split['end']}")
                return list(range(lo, hi))
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
