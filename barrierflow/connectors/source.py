"""The source interface: replayable, split into units that subtasks read and checkpoint.

A split's position is a small dict of plain values (MessagePack-encodable): it is the source's
operator state, restored before any user code runs.

**Threading:** a reader is used by its subtask's task thread only.
"""

from __future__ import annotations

from typing import Any, Protocol


class SourceReader(Protocol):
    def poll(self, max_records: int) -> list[Any] | None:
        """Up to ``max_records`` records; an empty list if none is ready; None at the end."""

    def snapshot(self) -> list[dict]:
        """The position of every split this reader owns, as of the last record returned."""

    def close(self) -> None: ...


class Source(Protocol):
    def initial_splits(self, subtask: int, parallelism: int) -> list[dict]:
        """The splits subtask ``subtask`` reads when the job starts without a checkpoint."""

    def create_reader(self, splits: list[dict]) -> SourceReader: ...
