"""What every reader of typed splits keeps, whatever reads them (Flink's ``SourceReaderBase``):
the splits it was given, each at its position, which split each record of a poll came from
(``split_runs``), the splits read to their end (``finished_splits``), what a checkpoint keeps
(every unfinished split at its position after the records polled so far) and the end of input
(no more splits will come and none is left).

A reader built on it says only how to read: ``_fetch`` returns a batch of records in runs of
one split each, every run with its split at its position after the run's records, and the
splits the batch read to their end. Two shapes fit: one split at a time, in order
(``sequential_split_reader.py``: files, table data files, ranges of numbers), or many at once
(Kafka's partitions, all read by one consumer, whose batches interleave them).

**Threading:** the task thread. Performs no I/O (the readers built on it do).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from barrierflow.connectors.interfaces.source_reader import SourceReader, SplitRun


class SourceSplit(Protocol):
    """A typed split (Flink's ``SourceSplit``): an immutable value, at one position."""

    @property
    def split_id(self) -> str:
        """Its name, unique among its source's splits (its watermark's, too)."""


SplitT = TypeVar("SplitT", bound=SourceSplit)


@dataclass
class Fetched(Generic[SplitT]):
    """What one ``_fetch`` read: ``runs`` in the order their records were read, each a split at
    its position after the run's records and those records (none: a split that moved without
    giving any, past records a schema skipped, say); ``finished``: the ids of the splits it
    read to their end."""

    runs: list[tuple[SplitT, list[Any]]] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)


class SplitReader(SourceReader, Generic[SplitT]):
    def __init__(self) -> None:
        self._splits: dict[str, SplitT] = {}  # unfinished, in the order given, at their positions
        self._no_more = False
        self._runs: list[SplitRun] = []
        self._finished: list[str] = []
        self._splits_done = 0  # read to their end, ever: a backlog of splits' consumption

    # --- what a reader built on it supplies -------------------------------------------------------

    @abstractmethod
    def _fetch(self, max_records: int) -> Fetched[SplitT]:
        """Up to ``max_records`` records of the unfinished splits (``_unfinished``), or none if
        none is ready now; runs only of splits unfinished until then. Called only while a
        split is unfinished or more may come."""

    def _splits_added(self, splits: list[SplitT]) -> None:
        """Splits were added (restored ones, or assigned): start reading them."""

    def _splits_finished(self, splits: list[SplitT]) -> None:
        """Splits were read to their end, here at their last position: stop reading them."""

    # --- for a reader built on it -----------------------------------------------------------------

    def _unfinished(self) -> dict[str, SplitT]:
        """The splits not read to their end, by id, in the order they were given."""
        return self._splits

    def _finish(self, split_ids: list[str]) -> None:
        """Ends splits that are unfinished, at the position they are at."""
        done = [self._splits.pop(i) for i in split_ids if i in self._splits]
        if done:
            self._splits_done += len(done)
            self._finished += [s.split_id for s in done]
            self._splits_finished(done)

    # --- SourceReader -----------------------------------------------------------------------------

    def add_splits(self, splits: list[SplitT]) -> None:
        for split in splits:
            self._splits[split.split_id] = split
        self._splits_added(list(splits))

    def notify_no_more_splits(self) -> None:
        self._no_more = True

    def poll(self, max_records: int) -> list[Any] | None:
        self._runs = []
        if self._no_more and not self._splits:
            return None
        fetched = self._fetch(max_records)
        out: list[Any] = []
        for split, records in fetched.runs:
            self._splits[split.split_id] = split
            if records:
                out += records
                self._runs.append((split.split_id, len(records)))
        self._finish(fetched.finished)
        return out

    def split_runs(self) -> list[SplitRun]:
        return self._runs

    def finished_splits(self) -> list[str]:
        done, self._finished = self._finished, []
        return done

    def snapshot_state(self, checkpoint_id: int) -> list[SplitT]:
        return list(self._splits.values())
