"""A source's split enumerator: on the JobMaster, decides which reader reads which split.

An enumerator's ``snapshot_state(N)`` holds every split it has not assigned yet (a value of its
source's ``enumerator_state_codec``). An assignment made after the enumerator's snapshot of N
reaches the reader after the reader's snapshot of N (``control/operator_coordinator.py``), so
that after a restore each split is either with a reader or with the enumerator, never both and
never neither.

**Threading:** an enumerator is used by the JobMaster's thread only (``call_periodically``'s
``discover`` runs on a thread of its own). This module performs no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

# A split and its position: a value of its source's ``split_codec`` (by default, a dict of
# plain values MessagePack can hold)
Split = Any
T = TypeVar("T")


class SplitEnumeratorContext(ABC):
    """What an enumerator may do: assign splits to the readers, end them, discover."""

    @property
    @abstractmethod
    def operator_uid(self) -> str: ...

    @property
    @abstractmethod
    def parallelism(self) -> int: ...

    @abstractmethod
    def registered_readers(self) -> frozenset[int]:
        """The subtasks whose readers run now (of the current attempt)."""

    @abstractmethod
    def assign_splits(self, assignment: Mapping[int, list[Split]]) -> None:
        """Sends each subtask its splits (each must be a registered reader)."""

    @abstractmethod
    def signal_no_more_splits(self, subtask: int) -> None: ...

    @abstractmethod
    def call_periodically(
        self, discover: Callable[[], T], handle: Callable[[T], None], interval_s: float
    ) -> None:
        """Every ``interval_s`` (the first time at once): ``discover()`` on a thread of its own
        (it may do I/O: list a directory, ask brokers), then ``handle(result)`` on the
        JobMaster's thread. A ``discover`` that raises is logged and tried again next time."""


class SplitEnumerator(ABC):
    """Its state (unassigned splits, what discovery knows) goes into every checkpoint; after a
    failover it is restored from the checkpoint the job restores (``Source.
    restore_enumerator``), or made anew."""

    def start(self) -> None:  # noqa: B027 - an optional hook
        """After it was made or restored: start discovery here."""

    @abstractmethod
    def handle_split_request(self, subtask: int) -> None:
        """``subtask``'s reader asks for a split (``SourceReaderContext.send_split_request``)."""

    @abstractmethod
    def add_splits_back(self, splits: list[Split], subtask: int) -> None:
        """Splits assigned to ``subtask`` after the last checkpoint, which a restart of that
        subtask alone lost: they are to be assigned again. (barrierflow fails over the whole
        job and restores the enumerator from the checkpoint instead; a coordinator that
        restarts one subtask calls this.)"""

    @abstractmethod
    def add_reader(self, subtask: int) -> None:
        """``subtask``'s reader runs: assign it what it should read now."""

    @abstractmethod
    def snapshot_state(self, checkpoint_id: int) -> Any:
        """Every split not assigned yet, what discovery knows: a value of the source's
        ``enumerator_state_codec`` (by default, plain MessagePack values)."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027 - an optional hook
        pass

    def backlog(self) -> float | None:
        """What it holds that no reader was given yet, in the unit of its readers' backlog
        (``SourceReader.backlog``): a file enumerator's files not handed out. None: nothing
        to add to the readers'."""
        return None

    def close(self) -> None:  # noqa: B027 - an optional hook
        pass
