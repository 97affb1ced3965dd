"""A source reader that reads the splits assigned to it one at a time, in the order they came,
and asks the enumerator for the next when it has none left (Flink's way for files: big and small
files even out over the readers). The file and table readers differ only in how they open, read
and close one split; the splits, the requests and what a checkpoint keeps are here.

A split is a dict with at least ``path`` (its name in ``finished_splits``) and ``offset`` (the
subclass's position in it, kept up to date as it reads): a checkpoint keeps every split not yet
finished, the one being read at its offset, so a restored reader resumes at the first record
after the checkpoint.

**Threading:** the task thread.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from barrierflow.connectors.source_reader import SourceReader, SourceReaderContext, SplitRun
from barrierflow.connectors.split_enumerator import Split


class SequentialSplitReader(SourceReader):
    def __init__(self, context: SourceReaderContext) -> None:
        self._request = context.send_split_request
        self._splits: deque[Split] = deque()  # the first is being read once one is open
        self._reading = False  # the first split is open
        self._asked = False  # a split request is on its way
        self._no_more = False
        self._last: list[SplitRun] = []
        self._finished: list[str] = []

    # --- what a subclass reads with ------------------------------------------------------------

    def _open_split(self, split: Split) -> None:
        """Opens ``split`` at ``split["offset"]``."""
        raise NotImplementedError

    def _read_split(self, split: Split, max_records: int) -> tuple[list[Any], bool]:
        """Up to ``max_records`` records of the open split, with ``split["offset"]`` moved past
        them, and whether the split has no more."""
        raise NotImplementedError

    def _close_split(self) -> None:
        raise NotImplementedError

    # --- SourceReader ----------------------------------------------------------------------------

    def start(self) -> None:
        if not self._splits:
            self._ask()

    def _ask(self) -> None:
        if not self._asked and not self._no_more:
            self._asked = True
            self._request()

    def add_splits(self, splits: list[Split]) -> None:
        self._splits += [dict(s) for s in splits]
        self._asked = False

    def notify_no_more_splits(self) -> None:
        self._no_more = True

    def poll(self, max_records: int) -> list[Any] | None:
        self._last = []
        if not self._reading:
            if not self._splits:
                if self._no_more:
                    return None
                self._ask()
                return []
            self._open_split(self._splits[0])
            self._reading = True
        split = self._splits[0]
        out, at_end = self._read_split(split, max_records)
        if at_end:
            self._end_of_split()
        if out:
            self._last = [(split["path"], len(out))]
        return out

    def _end_of_split(self) -> None:
        self.close()
        self._finished.append(self._splits.popleft()["path"])
        if not self._splits:
            self._ask()  # the next split while this poll's records go on their way

    def split_runs(self) -> list[SplitRun]:
        return self._last

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return [dict(s) for s in self._splits]

    def close(self) -> None:
        if self._reading:
            self._reading = False
            self._close_split()
