"""Checkpoints that were triggered and are collecting acknowledgements.

``PendingCheckpoint`` is one of them; ``PendingCheckpoints`` all of them, oldest first, with
when each started: it decides which expired, which to report as slow, and which a completion
subsumes. Holds no clock (calls take ``now_s``). Performs no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from barrierflow.checkpoint.metadata import OperatorSubtaskState, SubtaskCheckpointStats
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, CheckpointOptions

TaskKey = tuple[str, int]  # (vertex id, subtask index)


class AckResult(enum.Enum):
    SUCCESS = "success"
    DUPLICATE = "duplicate"
    UNKNOWN_TASK = "unknown task"
    DISCARDED = "discarded"


@dataclass(frozen=True, slots=True)
class TaskAcknowledgement:
    task: TaskKey
    operator_states: dict[str, OperatorSubtaskState]  # operator uid -> state
    stats: SubtaskCheckpointStats


@dataclass
class PendingCheckpoint:
    checkpoint_id: int
    trigger_timestamp_ms: int
    tasks_to_ack: frozenset[TaskKey]
    options: CheckpointOptions = CHECKPOINT
    acknowledged: dict[TaskKey, TaskAcknowledgement] = field(default_factory=dict)
    discarded: bool = False
    finalizing: bool = False  # fully acknowledged; its completion marker is being written
    # operator uid -> its coordinator's state, taken when the checkpoint was triggered
    coordinator_states: dict[str, bytes] = field(default_factory=dict)

    def acknowledge(self, ack: TaskAcknowledgement) -> AckResult:
        if self.discarded:
            return AckResult.DISCARDED
        if ack.task not in self.tasks_to_ack:
            return AckResult.UNKNOWN_TASK
        if ack.task in self.acknowledged:
            return AckResult.DUPLICATE
        self.acknowledged[ack.task] = ack
        return AckResult.SUCCESS

    @property
    def is_fully_acknowledged(self) -> bool:
        return len(self.acknowledged) == len(self.tasks_to_ack)

    @property
    def not_yet_acknowledged(self) -> frozenset[TaskKey]:
        return self.tasks_to_ack - self.acknowledged.keys()

    def acknowledged_states(self) -> list[OperatorSubtaskState]:
        return [s for a in self.acknowledged.values() for s in a.operator_states.values()]


class PendingCheckpoints:
    """``timeout_s``: how long a checkpoint may take; ``report_every_s``: how often a slow one
    is reported (first after that long)."""

    def __init__(self, timeout_s: float, report_every_s: float = 30.0) -> None:
        self._timeout_s = timeout_s
        self._report_every_s = report_every_s
        self._pending: dict[int, PendingCheckpoint] = {}
        self._started_s: dict[int, float] = {}
        self._next_report_s: dict[int, float] = {}

    def add(self, pending: PendingCheckpoint, now_s: float) -> None:
        cid = pending.checkpoint_id
        if self._pending and cid <= max(self._pending):
            raise ValueError(f"checkpoint {cid} is not newer than the pending {max(self._pending)}")
        self._pending[cid] = pending
        self._started_s[cid] = now_s
        self._next_report_s[cid] = now_s + self._report_every_s

    def get(self, checkpoint_id: int) -> PendingCheckpoint | None:
        return self._pending.get(checkpoint_id)

    def __len__(self) -> int:
        return len(self._pending)

    def ids(self) -> list[int]:
        return sorted(self._pending)

    def remove(self, checkpoint_id: int) -> PendingCheckpoint | None:
        """Ends ``checkpoint_id`` here (completed or aborted); None if it was not pending."""
        self._started_s.pop(checkpoint_id, None)
        self._next_report_s.pop(checkpoint_id, None)
        return self._pending.pop(checkpoint_id, None)

    def elapsed_s(self, checkpoint_id: int, now_s: float) -> float:
        return now_s - self._started_s[checkpoint_id]

    def subsumed_by(self, checkpoint_id: int) -> list[int]:
        """The pending checkpoints older than ``checkpoint_id``: once it completed, they can
        never complete usefully (a restore takes the newest). Savepoints are never subsumed."""
        return [
            c
            for c, pending in sorted(self._pending.items())
            if c < checkpoint_id and not pending.options.is_savepoint
        ]

    def expired(self, now_s: float) -> list[int]:
        """Those past the timeout, except one whose marker is being written: every task did
        its part, and what remains is the coordinator's own storage write."""
        return [
            c
            for c in sorted(self._pending)
            if now_s - self._started_s[c] > self._timeout_s and not self._pending[c].finalizing
        ]

    def due_for_report(self, now_s: float) -> list[PendingCheckpoint]:
        """The slow ones to report now; each is reported again ``report_every_s`` later."""
        due = []
        for cid in sorted(self._pending):
            if now_s >= self._next_report_s[cid]:
                self._next_report_s[cid] = now_s + self._report_every_s
                due.append(self._pending[cid])
        return due
