"""What the driver side asks of leader election before it acts for a job: whether it still
leads, under which epoch, and durable checkpoint ids. Without high availability there is one
driver and the answer is always yes (``NOT_HIGHLY_AVAILABLE``); with it, ``client/ha/`` answers
from the lease.

Every write or deletion that others trust is *fenced*: ``check`` runs right before it, and a
JobMaster that lost its lease (paused, or cut off from the HA storage) does none of them: no
``_metadata``, no commit notification, no deletion, no history, no address file. The storage
I/O thread checks before each action it runs (``FencedStorageIo``).

Performs no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Protocol

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.coordination.storage_io import Done, StorageIo
from barrierflow.errors import LeadershipLostError


class JobEnd(enum.Enum):
    """How a job ended, as the HA storage records it: a later driver of the same cluster id
    does not run an ended job again."""

    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"


class Leadership(Protocol):
    """Threading: ``check`` and ``epoch`` from any thread; the rest from the JobMaster's."""

    @property
    def epoch(self) -> int:
        """The leader's epoch; 0 without high availability."""

    @property
    def cluster_id(self) -> str | None:
        """The cluster id led (``high-availability.cluster-id``); None without it."""

    @property
    def leading_since_ms(self) -> int:
        """Since when (wall clock) this process leads."""

    def check(self, action: str) -> None:
        """Raises ``LeadershipLostError`` unless this process may do ``action`` now."""

    def reserve_checkpoint_ids(self, up_to: int) -> None:
        """Makes durable that ids below ``up_to`` may be used by this leader: a later leader
        starts past them (Flink's ``CheckpointIDCounter``). Fenced."""

    def start(self, on_lost: Callable[[LeadershipLostError], None]) -> None:
        """The job starts: keep the lease renewed, and call ``on_lost`` (from another thread)
        if leadership ends."""

    def job_ended(self, end: JobEnd, failure: str | None) -> None:
        """The job ended for good: record it, and hand the lease back."""


class NotHighlyAvailable:
    """One driver per job: it always leads."""

    epoch = 0
    cluster_id = None
    leading_since_ms = 0

    def check(self, action: str) -> None:
        pass

    def reserve_checkpoint_ids(self, up_to: int) -> None:
        pass

    def start(self, on_lost: Callable[[LeadershipLostError], None]) -> None:
        pass

    def job_ended(self, end: JobEnd, failure: str | None) -> None:
        pass


NOT_HIGHLY_AVAILABLE = NotHighlyAvailable()


def refuse_a_later_epoch(metadata: CheckpointMetadata, epoch: int) -> None:
    """A leader never builds on a checkpoint that a leader of a later epoch wrote: a later
    epoch leads the job now, and this one is a paused leader that woke up."""
    if epoch and metadata.leader_epoch > epoch:
        raise LeadershipLostError(
            epoch,
            metadata.leader_epoch,
            f"checkpoint {metadata.checkpoint_id} was written by epoch {metadata.leader_epoch}; "
            "this JobMaster does not restore it",
        )


class CheckpointIds:
    """The checkpoint ids of one leader, in blocks it reserves durably before using them: one
    write per ``block`` checkpoints, never one per checkpoint."""

    BLOCK = 100

    def __init__(self, first: int, leadership: Leadership) -> None:
        self._next = first
        self._reserved = first  # ids below this one are reserved
        self._leadership = leadership

    def take(self) -> int:
        """The next id; reserves a new block first when the last one is used up."""
        if self._next >= self._reserved:
            self._leadership.reserve_checkpoint_ids(self._next + self.BLOCK)
            self._reserved = self._next + self.BLOCK
        cid = self._next
        self._next += 1
        return cid

    def continue_after(self, used: int) -> None:
        """Ids up to ``used`` are taken (by earlier drivers of the job)."""
        self._next = max(self._next, used + 1)

    @property
    def next(self) -> int:
        return self._next


class FencedStorageIo:
    """A ``StorageIo`` that runs a piece of work only while its JobMaster leads: a paused
    leader that woke after a standby took over writes and deletes nothing it had queued (the
    work's ``done`` hears ``LeadershipLostError``)."""

    def __init__(self, inner: StorageIo, leadership: Leadership) -> None:
        self._inner = inner
        self._leadership = leadership

    def run(self, work: Callable[[], object], done: Done | None = None) -> None:
        def fenced() -> object:
            self._leadership.check("write or delete in the checkpoint storage")
            return work()

        self._inner.run(fenced, done)
