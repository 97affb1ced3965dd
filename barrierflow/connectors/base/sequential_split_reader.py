"""A reader of splits one at a time, in the order they came (``split_reader.py`` keeps the
splits, positions and runs): files, table data files, ranges of numbers. The readers built on it
differ only in how they open, read and close one split.

One that pulls its splits (files and table data files: Flink's way, big and small files even
out over the readers) asks the enumerator for the next when it has none left; one whose
enumerator pushes them (ranges, dealt out at the start) never asks.

**Threading:** the task thread. Performs no I/O (the readers built on it do).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from barrierflow.connectors.base.split_reader import Fetched, SplitReader, SplitT
from barrierflow.protocol.source_backlog import SourceBacklog

UNREAD_FILES = "unread files"


class SequentialSplitReader(SplitReader[SplitT]):
    """``request_split``: asks the enumerator for a split (None: its splits are pushed)."""

    # A reader of whole files, a split each, tells its backlog as unread files (its own, and
    # the enumerator adds those it has not handed out): None, it cannot tell.
    backlog_label: str | None = None

    def __init__(self, request_split: Callable[[], None] | None) -> None:
        super().__init__()
        self._request = request_split
        self._reading = False  # the first unfinished split is open
        self._asked = False  # a split request is on its way

    # --- what a reader built on it supplies -------------------------------------------------------

    @abstractmethod
    def _open_split(self, split: SplitT) -> None:
        """Opens ``split`` at its position."""

    @abstractmethod
    def _read_split(self, split: SplitT, max_records: int) -> tuple[list[Any], SplitT, bool]:
        """Up to ``max_records`` records of the open split ``split``; ``split`` at its position
        after them; and whether the split has no more."""

    @abstractmethod
    def _close_split(self) -> None: ...

    # --- SplitReader ------------------------------------------------------------------------------

    def backlog(self) -> SourceBacklog | None:
        if self.backlog_label is None:
            return None
        return SourceBacklog(self.backlog_label, len(self._unfinished()), self._splits_done)

    def start(self) -> None:
        if not self._unfinished():
            self._ask()

    def _ask(self) -> None:
        if self._request is not None and not self._asked and not self._no_more:
            self._asked = True
            self._request()

    def _splits_added(self, splits: list[SplitT]) -> None:
        self._asked = False

    def _fetch(self, max_records: int) -> Fetched[SplitT]:
        unfinished = self._unfinished()
        if not unfinished:
            self._ask()
            return Fetched()
        split = next(iter(unfinished.values()))
        if not self._reading:
            self._open_split(split)
            self._reading = True
        records, after, at_end = self._read_split(split, max_records)
        return Fetched([(after, records)], [after.split_id] if at_end else [])

    def _splits_finished(self, splits: list[SplitT]) -> None:
        self.close()
        if not self._unfinished():
            self._ask()  # the next split while this poll's records go on their way

    def close(self) -> None:
        if self._reading:
            self._reading = False
            self._close_split()
