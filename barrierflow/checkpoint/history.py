"""The checkpoint history of a job: what each checkpoint did, completed or failed.

Kept as ``<checkpoint-dir>/<job-id>/_history.json`` (bounded to the last ``HISTORY_LENGTH``
checkpoints), so that ``barrierflow checkpoints list`` can show a job's checkpoints after they
were subsumed or the job ended. JSON decoded only into these types. Performs no I/O.
"""

from __future__ import annotations

import enum

import msgspec

from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat

HISTORY_FILE = "_history.json"
HISTORY_LENGTH = 100


class CheckpointStatus(enum.Enum):
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class CheckpointRecord(msgspec.Struct, frozen=True):
    checkpoint_id: int
    status: CheckpointStatus
    trigger_timestamp_ms: int
    end_timestamp_ms: int
    duration_ms: float
    state_size: int  # the whole state the checkpoint references
    checkpointed_size: int  # what this checkpoint wrote (smaller for incremental checkpoints)
    num_tasks: int
    num_acknowledged: int
    failure_reason: str | None = None
    subtasks: list[SubtaskCheckpointStats] = []
    kind: CheckpointKind = CheckpointKind.CHECKPOINT
    snapshot_format: SnapshotFormat = SnapshotFormat.NATIVE
    external_path: str | None = None  # a savepoint's directory
    unaligned: bool = False  # some subtask took it unaligned
    persisted_data: int = 0  # bytes of data in flight stored, over every subtask
    processed_data: int = 0  # bytes processed during alignment, over every subtask
    leader_epoch: int = 0  # of the JobMaster that triggered it (high availability; 0: none)


class CheckpointHistory(msgspec.Struct):
    job_id: str
    job_name: str
    records: list[CheckpointRecord] = []

    def add(self, record: CheckpointRecord) -> None:
        self.records.append(record)
        del self.records[:-HISTORY_LENGTH]


_decoder = msgspec.json.Decoder(CheckpointHistory)


def encode_history(history: CheckpointHistory) -> bytes:
    return msgspec.json.encode(history)


def decode_history(data: bytes) -> CheckpointHistory:
    return _decoder.decode(data)
