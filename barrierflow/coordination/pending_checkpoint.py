"""A checkpoint that was triggered and is collecting acknowledgements.

Performs no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from barrierflow.checkpoint.metadata import OperatorSubtaskState, SubtaskCheckpointStats

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
    is_final: bool = False  # triggered after every source ended: tasks end once it completes
    acknowledged: dict[TaskKey, TaskAcknowledgement] = field(default_factory=dict)
    discarded: bool = False

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
