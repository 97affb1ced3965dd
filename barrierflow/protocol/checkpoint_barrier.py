"""A checkpoint barrier and the options it carries from the coordinator's trigger to every
operator's snapshot.

The coordinator decides what a checkpoint is (a periodic checkpoint, a savepoint, the final
checkpoint of a bounded job), in which format state is written and how barriers align; the
options travel in ``TriggerCheckpoint``, in every barrier frame, and reach
``Operator.snapshot_state`` and ``KeyedStateBackend.snapshot``. Performs no I/O.
"""

from __future__ import annotations

import enum

import msgspec


class CheckpointKind(enum.Enum):
    CHECKPOINT = "checkpoint"  # periodic: the system's recovery log, deleted once subsumed
    FINAL = "final"  # after every source ended: tasks finish once it completes
    # The user's, triggered by hand and kept until the user deletes it:
    SAVEPOINT = "savepoint"  # the job goes on; commits nothing
    SUSPEND = "suspend"  # stop: the sources stop at it, tasks end once it completed
    TERMINATE = "terminate"  # stop --drain: the input ended first; the job's final snapshot


class SnapshotFormat(enum.Enum):
    NATIVE = "native"  # each backend's own (RocksDB: its SST files, incremental if enabled)
    CANONICAL = "canonical"  # the backend-neutral key-group format (docs/formats.md)


class Alignment(enum.Enum):
    ALIGNED = "aligned"  # block each channel that delivered the barrier until all did
    UNALIGNED = "unaligned"  # the barrier overtakes buffered records, which are stored
    ALIGNED_WITH_TIMEOUT = "aligned-with-timeout"  # aligned, unaligned after the timeout


_SAVEPOINTS = frozenset(
    {CheckpointKind.SAVEPOINT, CheckpointKind.SUSPEND, CheckpointKind.TERMINATE}
)


class CheckpointOptions(msgspec.Struct, frozen=True):
    """What one checkpoint is; the same for every task of the checkpoint."""

    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    snapshot_format: SnapshotFormat = SnapshotFormat.NATIVE
    alignment: Alignment = Alignment.ALIGNED
    aligned_timeout_ms: int = 0  # with ALIGNED_WITH_TIMEOUT: how long alignment may block
    # Where a savepoint's files go (its directory's URI); a checkpoint's go to the job's
    # checkpoint directory, and this is empty.
    target_location: str = ""

    def __post_init__(self) -> None:
        if self.is_savepoint and self.alignment is not Alignment.ALIGNED:
            # A savepoint must be self-contained and portable: no in-flight data in it.
            raise ValueError(f"a savepoint is always aligned, got alignment {self.alignment.value}")
        if self.is_savepoint != bool(self.target_location):
            raise ValueError(
                "a savepoint, and only a savepoint, has a target location; got kind "
                f"{self.kind.value} with target location {self.target_location!r}"
            )
        timed = self.alignment is Alignment.ALIGNED_WITH_TIMEOUT
        if timed != (self.aligned_timeout_ms > 0):
            raise ValueError(
                "aligned_timeout_ms must be positive with alignment aligned-with-timeout and 0 "
                f"otherwise, got {self.aligned_timeout_ms} with {self.alignment.value}"
            )

    @property
    def is_savepoint(self) -> bool:
        return self.kind in _SAVEPOINTS

    @property
    def is_final(self) -> bool:
        """Taken after the input ended: tasks finish once it completes."""
        return self.kind is CheckpointKind.FINAL or self.kind is CheckpointKind.TERMINATE

    @property
    def stops_sources(self) -> bool:
        """Sources read nothing after its barrier; tasks end once it completes, without
        finishing their input (no flush of what operators buffer)."""
        return self.kind is CheckpointKind.SUSPEND

    @property
    def ends_job(self) -> bool:
        """Tasks end once it completes, so it commits: tasks are told it completed."""
        return self.is_final or self.stops_sources

    @property
    def commits(self) -> bool:
        """Whether tasks are told it completed (2PC sinks commit then). A savepoint taken
        while the job goes on commits nothing: the next checkpoint does (as in Flink 2)."""
        return not self.is_savepoint or self.ends_job


CHECKPOINT = CheckpointOptions()
FINAL_CHECKPOINT = CheckpointOptions(kind=CheckpointKind.FINAL)


class CheckpointBarrier(msgspec.Struct, frozen=True):
    """Injected at the sources for checkpoint ``checkpoint_id``; separates the records that
    checkpoint includes (before it) from those it does not (after it)."""

    checkpoint_id: int
    timestamp_ms: int
    options: CheckpointOptions = CHECKPOINT

    @property
    def timeout_deadline_ns(self) -> int | None:
        """With ``ALIGNED_WITH_TIMEOUT``: the wall-clock time (ns) after which its alignment
        goes unaligned, counted from the trigger as Flink does; None otherwise."""
        options = self.options
        if options.alignment is not Alignment.ALIGNED_WITH_TIMEOUT:
            return None
        return (self.timestamp_ms + options.aligned_timeout_ms) * 1_000_000


class DeclineReason(enum.Enum):
    SUBSUMED = "a newer checkpoint barrier arrived before this checkpoint was aligned"
    CANCELED = "the checkpoint was canceled upstream"
    SNAPSHOT_FAILED = "the snapshot failed"
