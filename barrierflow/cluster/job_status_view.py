"""JobStatusView: the seam between the JobMaster, which knows how the job is doing, and the
threads that show it (REST handlers, the Prometheus collector, a console status line).

The JobMaster feeds it (job status, attempts, subtask metrics from heartbeats, exceptions,
restores); the checkpoint coordinator feeds it as its ``CheckpointStatsListener``. Readers call
``snapshot()`` and get an immutable ``JobStatusSnapshot``; nobody reads the JobMaster's own
structures from another thread. Rates (records/s, busy/back-pressured/idle ms per second) are
computed here from the cumulative counters the subtasks send, over about the last
``RATE_WINDOW_MS`` of each subtask's own running time, so late or bunched heartbeats do not
distort them.

**Threading:** every method may be called from any thread; one lock guards the state, held
only to copy or update it (never during I/O). Performs no I/O; the clock is injected.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from barrierflow.checkpoint.history import HISTORY_LENGTH, CheckpointRecord, CheckpointStatus
from barrierflow.cluster.job_status import (
    CheckpointSettings,
    CheckpointStatistics,
    JobException,
    JobStatusSnapshot,
    LeaderStatus,
    PendingCheckpointStatus,
    RestoredCheckpoint,
    SubtaskStatus,
    TaskKey,
    TaskState,
    VertexInput,
    VertexStatus,
)
from barrierflow.control.messages import SubtaskMetrics
from barrierflow.graph.job_graph import JobGraph
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions

RATE_WINDOW_MS = 2000.0  # rates are over about this much of a subtask's running time
MAX_EXCEPTIONS = 16  # Flink keeps a bounded exception history too
MAX_RESCALES = 100
MAX_ACK_TIMESTAMPS = 100  # checkpoints whose per-subtask acknowledgement times are kept


@dataclass(frozen=True)
class _Sample:
    total_ms: float  # busy + back-pressured + idle: the subtask's running time
    metrics: SubtaskMetrics


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _vertices_of(job_graph: JobGraph) -> list[tuple[str, str, int, tuple[VertexInput, ...]]]:
    return [
        (
            v.id,
            v.name,
            v.parallelism,
            tuple(
                VertexInput(e.source.id, e.partitioner.kind.value) for e in job_graph.inputs_of(v)
            ),
        )
        for v in job_graph.vertices
    ]


class JobStatusView:
    def __init__(
        self,
        job_id: str,
        job_graph: JobGraph,
        settings: CheckpointSettings,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._lock = threading.Lock()
        self._clock_ms = clock_ms
        self._job_id = job_id
        self._job_name = job_graph.job_name
        self._max_parallelism = job_graph.max_parallelism
        self._settings = settings
        self._vertices = _vertices_of(job_graph)
        self._state = "CREATED"
        self._leader: LeaderStatus | None = None
        self._rescales: dict[int, Any] = {}  # id -> its RescaleRecord (cluster/scaling/)
        self._start_ms = clock_ms()
        self._end_ms = -1
        self._attempt = 0
        self._num_restarts = 0
        self._task_states: dict[TaskKey, TaskState] = {}
        self._samples: dict[TaskKey, deque[_Sample]] = {}
        self._subtasks: dict[TaskKey, SubtaskStatus] = {}
        self._exceptions: deque[JobException] = deque(maxlen=MAX_EXCEPTIONS)
        # checkpoints
        self._history: list[CheckpointRecord] = []
        self._num_completed = 0
        self._num_failed = 0
        self._pending: dict[int, PendingCheckpointStatus] = {}
        self._acks: dict[int, dict[TaskKey, int]] = {}
        self._restored: RestoredCheckpoint | None = None
        self._num_restored = 0

    # --- fed by the JobMaster -------------------------------------------------------------------

    def rescale_recorded(self, record: Any) -> None:
        """A rescale was asked for, or changed (``RescaleRecord``)."""
        with self._lock:
            self._rescales[record.id] = record
            for old in sorted(self._rescales)[:-MAX_RESCALES]:
                del self._rescales[old]

    def graph_changed(self, job_graph: JobGraph) -> None:
        """The job was rescaled: its vertices (and their parallelism) are those of
        ``job_graph`` from the next attempt on."""
        with self._lock:
            self._vertices = _vertices_of(job_graph)

    def leader_elected(self, cluster_id: str, epoch: int, since_ms: int) -> None:
        with self._lock:
            self._leader = LeaderStatus(cluster_id, epoch, since_ms)

    def job_status_changed(self, state: str) -> None:
        with self._lock:
            self._state = state
            terminal = state in ("FINISHED", "FAILED", "CANCELED")
            self._end_ms = self._clock_ms() if terminal else -1
            if terminal:
                for key, task_state in self._task_states.items():
                    if task_state in (TaskState.DEPLOYING, TaskState.RUNNING):
                        self._task_states[key] = (
                            TaskState.FAILED if state == "FAILED" else TaskState.CANCELED
                        )

    def attempt_started(self, attempt: int, tasks: Iterable[TaskKey]) -> None:
        """A new attempt's subtasks are deployed; the previous attempt's counters go (as in
        Flink, a restarted task counts from zero)."""
        with self._lock:
            if self._attempt:
                self._num_restarts += 1
            self._attempt = attempt
            self._task_states = dict.fromkeys(tasks, TaskState.DEPLOYING)
            self._samples.clear()
            self._subtasks.clear()

    def task_state_changed(self, task: TaskKey, state: TaskState) -> None:
        with self._lock:
            if task in self._task_states:
                self._task_states[task] = state

    def subtask_metrics(self, metrics: Iterable[SubtaskMetrics]) -> None:
        """The cumulative counters a slot's heartbeat carried."""
        with self._lock:
            for m in metrics:
                key = (m.vertex, m.subtask)
                if key not in self._task_states:
                    continue  # not a subtask of this attempt
                samples = self._samples.setdefault(key, deque())
                sample = _Sample(m.busy_ms + m.backpressured_ms + m.idle_ms, m)
                if samples and sample.total_ms < samples[-1].total_ms:
                    samples.clear()  # a new subtask of the same key: counters start over
                samples.append(sample)
                while len(samples) > 2 and samples[1].total_ms <= sample.total_ms - RATE_WINDOW_MS:
                    samples.popleft()
                self._subtasks[key] = _status(key, samples)

    def exception_occurred(self, attempt: int, error: str, traceback: str) -> None:
        with self._lock:
            self._exceptions.append(JobException(self._clock_ms(), attempt, error, traceback))

    def checkpoint_restored(
        self, checkpoint_id: int, is_savepoint: bool, external_path: str | None
    ) -> None:
        with self._lock:
            self._restored = RestoredCheckpoint(
                checkpoint_id, self._clock_ms(), is_savepoint, external_path
            )
            self._num_restored += 1

    def history_loaded(self, records: Iterable[CheckpointRecord]) -> None:
        """The history a previous JobMaster of the job left (``--resume``)."""
        with self._lock:
            self._history = list(records)[-HISTORY_LENGTH:]

    # --- fed by the checkpoint coordinator (CheckpointStatsListener) ----------------------------

    def checkpoint_triggered(
        self,
        checkpoint_id: int,
        trigger_timestamp_ms: int,
        options: CheckpointOptions,
        num_tasks: int,
    ) -> None:
        with self._lock:
            self._pending[checkpoint_id] = PendingCheckpointStatus(
                checkpoint_id, trigger_timestamp_ms, options.kind, num_tasks, 0
            )
            self._acks[checkpoint_id] = {}
            while len(self._acks) > MAX_ACK_TIMESTAMPS:
                del self._acks[min(self._acks)]

    def checkpoint_acknowledged(self, checkpoint_id: int, task: TaskKey, ack_ms: int) -> None:
        with self._lock:
            acks = self._acks.get(checkpoint_id)
            if acks is not None:
                acks[task] = ack_ms
            pending = self._pending.get(checkpoint_id)
            if pending is not None:
                self._pending[checkpoint_id] = PendingCheckpointStatus(
                    pending.checkpoint_id,
                    pending.trigger_timestamp_ms,
                    pending.kind,
                    pending.num_tasks,
                    pending.num_acknowledged + 1,
                )

    def checkpoint_recorded(self, record: CheckpointRecord) -> None:
        with self._lock:
            self._pending.pop(record.checkpoint_id, None)
            self._history.append(record)
            del self._history[:-HISTORY_LENGTH]
            if record.status is CheckpointStatus.COMPLETED:
                self._num_completed += 1
            else:
                self._num_failed += 1

    # --- read from any thread -------------------------------------------------------------------

    def snapshot(self) -> JobStatusSnapshot:
        with self._lock:
            vertices = tuple(
                VertexStatus(
                    vertex_id,
                    name,
                    parallelism,
                    inputs,
                    tuple(self._subtask_status((vertex_id, i)) for i in range(parallelism)),
                )
                for vertex_id, name, parallelism, inputs in self._vertices
            )
            checkpoints = CheckpointStatistics(
                num_completed=self._num_completed,
                num_failed=self._num_failed,
                history=tuple(self._history),
                in_progress=tuple(self._pending[c] for c in sorted(self._pending)),
                restored=self._restored,
                num_restored=self._num_restored,
                ack_timestamps={c: dict(a) for c, a in self._acks.items()},
            )
            return JobStatusSnapshot(
                job_id=self._job_id,
                job_name=self._job_name,
                state=self._state,
                start_time_ms=self._start_ms,
                end_time_ms=self._end_ms,
                now_ms=self._clock_ms(),
                attempt=self._attempt,
                num_restarts=self._num_restarts,
                max_parallelism=self._max_parallelism,
                vertices=vertices,
                checkpoints=checkpoints,
                settings=self._settings,
                exceptions=tuple(self._exceptions),
                leader=self._leader,
                rescales=tuple(self._rescales[i] for i in sorted(self._rescales)),
            )

    def subtask_rates(self) -> dict[TaskKey, SubtaskStatus]:
        """The running attempt's subtasks that reported metrics: their counters and rates
        (the autoscaler samples them)."""
        with self._lock:
            return dict(self._subtasks)

    def _subtask_status(self, key: TaskKey) -> SubtaskStatus:
        state = self._task_states.get(key, TaskState.DEPLOYING)
        status = self._subtasks.get(key)
        if status is None:
            return SubtaskStatus(key[0], key[1], state)
        return dataclasses.replace(status, state=state)


def _status(key: TaskKey, samples: deque[_Sample]) -> SubtaskStatus:
    """Counters of the newest sample; rates between the oldest and the newest."""
    new = samples[-1].metrics
    old = samples[0].metrics
    elapsed_s = (samples[-1].total_ms - samples[0].total_ms) / 1000

    def rate(now: float, before: float) -> float:
        return max(0.0, (now - before) / elapsed_s) if elapsed_s > 0 else 0.0

    def ms_per_s(now: float, before: float) -> float:
        return min(1000.0, rate(now, before))

    return SubtaskStatus(
        key[0],
        key[1],
        TaskState.RUNNING,
        records_in=new.records_in,
        records_out=new.records_out,
        records_in_per_s=rate(new.records_in, old.records_in),
        records_out_per_s=rate(new.records_out, old.records_out),
        busy_ms_per_s=ms_per_s(new.busy_ms, old.busy_ms),
        backpressured_ms_per_s=ms_per_s(new.backpressured_ms, old.backpressured_ms),
        idle_ms_per_s=ms_per_s(new.idle_ms, old.idle_ms),
        busy_ms=new.busy_ms,
        backpressured_ms=new.backpressured_ms,
        idle_ms=new.idle_ms,
        user_metrics=new.user,
        backlog=new.backlog,
        debloated_buffer_size=new.debloated_buffer_size,
    )
