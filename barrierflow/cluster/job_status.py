"""JobStatusSnapshot: what a running job looks like at one moment, for whoever shows it (the
REST API and web UI, the Prometheus metrics, a console status line).

Immutable values, built by ``JobStatusView.snapshot()``; reading them needs no lock. The read
API a status line needs is on ``JobStatusSnapshot`` itself: ``records_in_per_s``,
``records_out_per_s``, ``backpressure``, ``last_checkpoint``. Performs no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.protocol.checkpoint_barrier import CheckpointKind
from barrierflow.protocol.source_backlog import SourceBacklog

TaskKey = tuple[str, int]  # (vertex id, subtask index)

# Flink's back-pressure levels: the share of time a subtask waited for output credit.
LOW_BACKPRESSURE = 0.1
HIGH_BACKPRESSURE = 0.5


class BackpressureLevel(enum.Enum):
    OK = "ok"
    LOW = "low"
    HIGH = "high"

    @classmethod
    def of(cls, ratio: float) -> BackpressureLevel:
        """Flink's thresholds: up to 10% OK, up to 50% LOW, above HIGH."""
        if ratio <= LOW_BACKPRESSURE:
            return cls.OK
        return cls.LOW if ratio <= HIGH_BACKPRESSURE else cls.HIGH


class TaskState(enum.Enum):
    """Flink's execution states, the ones a subtask of ours goes through."""

    DEPLOYING = "DEPLOYING"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    CANCELED = "CANCELED"
    FAILED = "FAILED"


@dataclass(frozen=True)
class SubtaskStatus:
    """One subtask's counters (since its attempt started) and rates (over the last seconds)."""

    vertex: str
    subtask: int
    state: TaskState
    records_in: int = 0
    records_out: int = 0
    records_in_per_s: float = 0.0
    records_out_per_s: float = 0.0
    busy_ms_per_s: float = 0.0
    backpressured_ms_per_s: float = 0.0
    idle_ms_per_s: float = 0.0
    busy_ms: float = 0.0  # accumulated
    backpressured_ms: float = 0.0
    idle_ms: float = 0.0
    # the program's metrics (get_metrics_group()): (operator, name, value)
    user_metrics: tuple[tuple[str, str, float], ...] = ()
    backlog: SourceBacklog | None = None  # a source's, when its reader can tell
    # records per buffer its input gate asks for (Flink's debloatedBufferSize); None: a source
    debloated_buffer_size: int | None = None


@dataclass(frozen=True)
class VertexInput:
    vertex: str  # the upstream vertex's id
    ship_strategy: str  # the edge's partitioner: forward, rebalance, key_groups


@dataclass(frozen=True)
class VertexStatus:
    id: str
    name: str
    parallelism: int
    inputs: tuple[VertexInput, ...]
    subtasks: tuple[SubtaskStatus, ...]

    @property
    def is_source(self) -> bool:
        return not self.inputs

    @property
    def records_in(self) -> int:
        return sum(s.records_in for s in self.subtasks)

    @property
    def records_out(self) -> int:
        return sum(s.records_out for s in self.subtasks)

    @property
    def records_in_per_s(self) -> float:
        return sum(s.records_in_per_s for s in self.subtasks)

    @property
    def records_out_per_s(self) -> float:
        return sum(s.records_out_per_s for s in self.subtasks)

    @property
    def backpressure_ratio(self) -> float:
        """As Flink's web UI: the most back-pressured subtask's share of time."""
        return max((s.backpressured_ms_per_s for s in self.subtasks), default=0.0) / 1000

    @property
    def busy_ratio(self) -> float:
        return max((s.busy_ms_per_s for s in self.subtasks), default=0.0) / 1000

    @property
    def backpressure(self) -> BackpressureLevel:
        return BackpressureLevel.of(self.backpressure_ratio)

    def count_states(self) -> dict[TaskState, int]:
        counts = dict.fromkeys(TaskState, 0)
        for s in self.subtasks:
            counts[s.state] += 1
        return counts


@dataclass(frozen=True)
class PendingCheckpointStatus:
    checkpoint_id: int
    trigger_timestamp_ms: int
    kind: CheckpointKind
    num_tasks: int
    num_acknowledged: int


@dataclass(frozen=True)
class RestoredCheckpoint:
    checkpoint_id: int
    restore_timestamp_ms: int
    is_savepoint: bool
    external_path: str | None  # where it was restored from, when not the job's own checkpoint


@dataclass(frozen=True)
class CheckpointStatistics:
    """Flink's checkpoint statistics: counts, the history (oldest first, completed and failed,
    as ``barrierflow checkpoints list`` shows it), what is in progress, what was restored."""

    num_completed: int
    num_failed: int
    history: tuple[CheckpointRecord, ...]
    in_progress: tuple[PendingCheckpointStatus, ...]
    restored: RestoredCheckpoint | None
    num_restored: int
    # Wall-clock time of each subtask's acknowledgement, of the checkpoints this JobMaster saw.
    ack_timestamps: Mapping[int, Mapping[TaskKey, int]]

    @property
    def num_in_progress(self) -> int:
        return len(self.in_progress)

    @property
    def latest_completed(self) -> CheckpointRecord | None:
        """The newest completed checkpoint, savepoints not included (Flink's "latest")."""
        return _latest(self.history, CheckpointStatus.COMPLETED, savepoint=False)

    @property
    def latest_savepoint(self) -> CheckpointRecord | None:
        return _latest(self.history, CheckpointStatus.COMPLETED, savepoint=True)

    @property
    def latest_failed(self) -> CheckpointRecord | None:
        return _latest(self.history, CheckpointStatus.FAILED, savepoint=None)

    def record(self, checkpoint_id: int) -> CheckpointRecord | None:
        return next((r for r in self.history if r.checkpoint_id == checkpoint_id), None)


def is_savepoint(record: CheckpointRecord) -> bool:
    return record.kind in (
        CheckpointKind.SAVEPOINT,
        CheckpointKind.SUSPEND,
        CheckpointKind.TERMINATE,
    )


def _latest(
    history: tuple[CheckpointRecord, ...], status: CheckpointStatus, savepoint: bool | None
) -> CheckpointRecord | None:
    for record in reversed(history):
        if record.status is status and savepoint in (None, is_savepoint(record)):
            return record
    return None


@dataclass(frozen=True)
class CheckpointSettings:
    """How the job checkpoints (Flink's ``/checkpoints/config``)."""

    enabled: bool
    exactly_once: bool
    interval_ms: int
    timeout_ms: int
    min_pause_ms: int
    max_concurrent: int
    tolerable_failures: int
    num_retained: int
    unaligned: bool
    aligned_timeout_ms: int
    retain_on_cancel: bool
    state_backend: str  # a registered kind's name (state/backends/registry.py)
    incremental: bool
    storage_uri: str | None
    savepoint_dir: str | None
    checkpoints_after_tasks_finish: bool


@dataclass(frozen=True)
class JobException:
    timestamp_ms: int
    attempt: int
    error: str
    traceback: str


@dataclass(frozen=True)
class LeaderStatus:
    """Who leads the job under high availability: its cluster id, epoch, and since when."""

    cluster_id: str
    epoch: int
    since_ms: int


@dataclass(frozen=True)
class JobStatusSnapshot:
    job_id: str
    job_name: str
    state: str  # Flink's job status: CREATED, RUNNING, RESTARTING, FINISHED, FAILED, CANCELED
    start_time_ms: int
    end_time_ms: int  # -1 while it runs
    now_ms: int
    attempt: int
    num_restarts: int
    max_parallelism: int
    vertices: tuple[VertexStatus, ...]
    checkpoints: CheckpointStatistics
    settings: CheckpointSettings
    exceptions: tuple[JobException, ...]  # newest last
    leader: LeaderStatus | None = None  # under high availability
    rescales: tuple[Any, ...] = ()  # RescaleRecord (cluster/scaling/rescaler.py), oldest first

    @property
    def duration_ms(self) -> int:
        return (self.end_time_ms if self.end_time_ms >= 0 else self.now_ms) - self.start_time_ms

    def vertex(self, vertex_id: str) -> VertexStatus | None:
        return next((v for v in self.vertices if v.id == vertex_id), None)

    # --- what a status line shows -----------------------------------------------------------

    @property
    def records_in_per_s(self) -> float:
        """Records the job reads per second: what its sources take in."""
        return sum(v.records_in_per_s for v in self.vertices if v.is_source)

    @property
    def records_out_per_s(self) -> float:
        """Records its last vertices (the sinks) take in per second."""
        fed = {i.vertex for v in self.vertices for i in v.inputs}
        return sum(v.records_in_per_s for v in self.vertices if v.id not in fed)

    @property
    def backpressure(self) -> BackpressureLevel:
        """The worst vertex's level."""
        ratio = max((v.backpressure_ratio for v in self.vertices), default=0.0)
        return BackpressureLevel.of(ratio)

    @property
    def last_checkpoint(self) -> CheckpointRecord | None:
        return self.checkpoints.latest_completed
