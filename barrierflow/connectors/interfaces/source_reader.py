"""A source's reader: reads, on one subtask, the splits the enumerator gave it.

**Threading:** a reader is used by its subtask's task thread only. This module performs no
I/O (readers do).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from barrierflow.connectors.interfaces.split_enumerator import Split
from barrierflow.protocol.source_backlog import SourceBacklog

SplitRun = tuple[str, int]  # (split id, number of consecutive records of a poll from it)


def _no_split_requests() -> None:
    """A reader whose enumerator pushes its splits never needs to ask."""


@dataclass(frozen=True)
class SourceReaderContext:
    job_name: str
    operator_uid: str
    subtask: int
    parallelism: int
    # Asks the enumerator for a split (``SplitEnumerator.handle_split_request``).
    send_split_request: Callable[[], None] = field(
        default=_no_split_requests, repr=False, compare=False
    )


class SourceReader(ABC):
    """Reads the splits its subtask is given. Lifecycle: made by ``Source.create_reader``,
    given its restored splits (``add_splits``), ``start``, then ``poll`` until it returns None,
    with checkpoints and more splits in between; ``close``.

    For exactly-once reading, ``snapshot_state(N)`` holds the position of every split it was
    given and did not finish, as of the last record ``poll`` returned."""

    def start(self) -> None:  # noqa: B027 - an optional hook
        """After the restored splits were added: a reader that pulls its splits asks for its
        first one here."""

    @abstractmethod
    def add_splits(self, splits: list[Split]) -> None:
        """More splits to read (restored ones, or assigned by the enumerator)."""

    @abstractmethod
    def notify_no_more_splits(self) -> None:
        """The enumerator will assign no more: once the splits it has are done, ``poll``
        returns None (a bounded source's end)."""

    @abstractmethod
    def poll(self, max_records: int) -> list[Any] | None:
        """Up to ``max_records`` records; an empty list if none is ready now; None once every
        split it was given is done and no more will come."""

    @abstractmethod
    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        """Every split it was given and has not finished, at its position after the records
        ``poll`` returned so far."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027 - an optional hook
        """Checkpoint ``checkpoint_id`` completed (Kafka commits its offsets to the group)."""

    def split_runs(self) -> list[SplitRun]:
        """Which split each record of the last poll came from, as runs of consecutive records.
        A reader that overrides this gets a watermark per split (a slow Kafka partition holds
        back the others' windows, an idle one is left out), as Flink's sources do; otherwise
        its subtask has one."""
        return []

    def backlog(self) -> SourceBacklog | None:
        """What waits to be read in this reader's splits, and what it read so far (Flink's
        ``pendingRecords``); asked about once a second. None: it cannot tell, and the
        autoscaler scales this source on busy time alone. It must not block: a reader answers
        from what it knows (Kafka, from the high watermarks of its last fetches)."""
        return None

    def finished_splits(self) -> list[str]:
        """The ids of the splits read to their end since the last call, so that their
        watermarks stop holding the subtask's back (a file read to its end)."""
        return []

    def close(self) -> None:  # noqa: B027 - an optional hook
        pass


def tells_splits(reader: SourceReader) -> bool:
    """Whether ``reader`` says which split each record came from (overrides ``split_runs``)."""
    return type(reader).split_runs is not SourceReader.split_runs
