"""The enumerator of FileSource, and of the table sources (Delta, Iceberg), whose splits are
data files too: hands out files one at a time, to the reader that asks.

Bounded, it hands out the files listed when the job started, then tells each reader that asks
that there are no more. Monitoring (``monitor_continuously``), it lists its directories every
interval and keeps every path it found in its state, so that each file is read once, across
restores at any parallelism; a reader that asks while nothing is left waits for the next file
found. Performs no I/O itself: ``discover`` lists, on the coordinator's discovery thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec

from barrierflow.connectors.interfaces.split_enumerator import (
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)

S = TypeVar("S")


class FileEnumeratorState(msgspec.Struct, Generic[S], frozen=True):
    """The files not handed out yet; monitoring, also every path found (None: bounded)."""

    pending: list[S]
    known: list[str] | None = None


class FileSplitEnumerator(SplitEnumerator):
    """``discover``: lists the files of the source's paths, as splits at their start, each
    named by its path (``split_id``; None: bounded, ``pending`` is all there is); ``known``:
    the paths found so far (pending or handed out)."""

    def __init__(
        self,
        context: SplitEnumeratorContext,
        pending: list[Split],
        known: list[str] | None = None,
        discover: Callable[[], list[Split]] | None = None,
        interval_s: float = 0.0,
    ) -> None:
        self._context = context
        self._pending = list(pending)
        self._known = set(known or ()) | {s.split_id for s in pending}
        self._discover = discover
        self._interval_s = interval_s
        self._waiting: list[int] = []  # readers that asked while nothing was pending

    @classmethod
    def restore(
        cls,
        context: SplitEnumeratorContext,
        state: FileEnumeratorState[Any],
        discover: Callable[[], list[Split]] | None = None,
        interval_s: float = 0.0,
    ) -> FileSplitEnumerator:
        return cls(context, state.pending, state.known, discover, interval_s)

    def start(self) -> None:
        if self._discover is not None:
            self._context.call_periodically(self._discover, self._found, self._interval_s)

    def _found(self, splits: list[Split]) -> None:
        new = [s for s in splits if s.split_id not in self._known]
        self._known.update(s.split_id for s in new)
        self._pending += new
        waiting, self._waiting = self._waiting, []
        for subtask in waiting:
            self.handle_split_request(subtask)

    def handle_split_request(self, subtask: int) -> None:
        if subtask not in self._context.registered_readers():
            return  # of a reader that stopped; its new one asks again
        if self._pending:
            self._context.assign_splits({subtask: [self._pending.pop(0)]})
        elif self._discover is None:
            self._context.signal_no_more_splits(subtask)
        elif subtask not in self._waiting:
            self._waiting.append(subtask)

    def add_splits_back(self, splits: list[Split], subtask: int) -> None:
        self._pending = list(splits) + self._pending

    def add_reader(self, subtask: int) -> None:
        pass  # the reader asks for its files

    def backlog(self) -> float:
        """The files not handed out yet (readers tell theirs)."""
        return len(self._pending)

    def snapshot_state(self, checkpoint_id: int) -> FileEnumeratorState[Any]:
        known = sorted(self._known) if self._discover is not None else None
        return FileEnumeratorState(list(self._pending), known)
