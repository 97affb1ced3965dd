"""A checkpoint coordinator with every seam replaced: a clock the test moves, a gateway that
records what the tasks would be sent, and storage in memory (or any ``CoordinatorStorage``).

The test plays the tasks: ``acknowledge`` and ``decline`` build their messages.

**Threading:** one thread.
"""

from __future__ import annotations

from collections.abc import Callable

from barrierflow.checkpoint.metadata import OperatorSubtaskState, SubtaskCheckpointStats
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator, CoordinatorConfig
from barrierflow.coordination.coordinator_storage import CoordinatorStorage
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.coordination.leadership import NOT_HIGHLY_AVAILABLE, Leadership
from barrierflow.coordination.operator_coordinator_checkpoints import (
    OperatorCoordinatorCheckpoints,
)
from barrierflow.coordination.pending_checkpoint import TaskKey
from barrierflow.coordination.savepoint_completion import SavepointResult
from barrierflow.coordination.storage_housekeeping import ClaimedSnapshot
from barrierflow.coordination.storage_io import Done, StorageIo
from barrierflow.graph.execution_graph import ExecutionGraph
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointBarrier,
    CheckpointKind,
    SnapshotFormat,
)
from barrierflow.testing.in_memory_savepoint_storage import InMemorySavepointStorage

WALL_CLOCK_ORIGIN_MS = 1_700_000_000_000


class ManualClock:
    def __init__(self, now_s: float = 100.0) -> None:
        self.now_s = now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds

    def monotonic_s(self) -> float:
        return self.now_s

    def wall_ms(self) -> int:
        return WALL_CLOCK_ORIGIN_MS + int(self.now_s * 1000)


class RecordingGateway:
    """Records, as the messages the JobMaster would send, what the coordinator sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[TaskKey, msg.Message]] = []

    def trigger_checkpoint(self, task: TaskKey, barrier: CheckpointBarrier) -> None:
        message = msg.TriggerCheckpoint(
            0, barrier.checkpoint_id, barrier.timestamp_ms, barrier.options
        )
        self.sent.append((task, message))

    def notify_checkpoint_complete(self, task: TaskKey, checkpoint_id: int) -> None:
        self.sent.append((task, msg.NotifyCheckpointComplete(0, checkpoint_id)))

    def notify_checkpoint_aborted(
        self, task: TaskKey, checkpoint_id: int, references_released: bool
    ) -> None:
        self.sent.append((task, msg.NotifyCheckpointAborted(0, checkpoint_id, references_released)))

    def of_type(self, kind: type) -> list:
        return [m for _, m in self.sent if isinstance(m, kind)]

    def triggers(self) -> list[msg.TriggerCheckpoint]:
        return self.of_type(msg.TriggerCheckpoint)


class DeferredStorageIo:
    """Storage work held until the test runs it (``run_all``): what the coordinator does while
    its writes are still on their way."""

    def __init__(self) -> None:
        self.queued: list[tuple[Callable[[], object], Done | None]] = []

    def run(self, work: Callable[[], object], done: Done | None = None) -> None:
        self.queued.append((work, done))

    def run_all(self) -> None:
        """Runs the queued work in order, each ``done`` after its work, and what that queues."""
        while self.queued:
            work, done = self.queued.pop(0)
            error: BaseException | None = None
            try:
                work()
            except Exception as e:  # noqa: BLE001 - handed to done
                error = e
            if done is not None:
                done(error)


class CoordinatorHarness:
    """A coordinator of ``graph``'s job, its attempt started and every task running."""

    def __init__(
        self,
        graph: ExecutionGraph,
        config: CoordinatorConfig,
        storage: CoordinatorStorage | None = None,
        first_checkpoint_id: int = 1,
        job_id: str = "job-id",
        claimed: ClaimedSnapshot | None = None,
        storage_io: StorageIo | None = None,
        operator_coordinators: OperatorCoordinatorCheckpoints | None = None,
        leadership: Leadership = NOT_HIGHLY_AVAILABLE,
    ) -> None:
        self.graph = graph
        self.clock = ManualClock()
        self.gateway = RecordingGateway()
        self.storage = storage if storage is not None else InMemoryCheckpointStorage()
        self.savepoints = InMemorySavepointStorage()
        self.savepoint_results: list[SavepointResult] = []
        self.tasks = frozenset(s.id for s in graph.subtasks)
        self.sources = graph.source_subtasks
        self.coordinator = CheckpointCoordinator(
            job_id,
            graph.job_graph,
            self.storage,
            config,
            self.gateway,
            self.savepoints,
            first_checkpoint_id=first_checkpoint_id,
            clock=self.clock,
            claimed=claimed,
            storage_io=storage_io,
            operator_coordinators=operator_coordinators,
            leadership=leadership,
        )
        self.start_attempt()

    def start_attempt(self) -> None:
        self.coordinator.start_attempt(self.tasks, self.sources)
        self.coordinator.all_tasks_running()

    def tick_after(self, seconds: float) -> float:
        self.clock.advance(seconds)
        return self.coordinator.tick()

    def trigger(self) -> int:
        """Ticks until a checkpoint is triggered (at most an hour of clock); returns its id."""
        before = len(self.gateway.triggers())
        for _ in range(3600 * 10):
            self.coordinator.tick()
            if len(self.gateway.triggers()) > before:
                return self.gateway.triggers()[-1].checkpoint_id
            self.clock.advance(0.1)
        raise AssertionError("no checkpoint was triggered within an hour")

    def request_savepoint(
        self,
        target_dir: str | None = "/savepoints",
        snapshot_format: SnapshotFormat = SnapshotFormat.CANONICAL,
        kind: CheckpointKind = CheckpointKind.SAVEPOINT,
    ) -> None:
        """Asks for a savepoint; its result goes to ``savepoint_results``."""
        self.coordinator.trigger_savepoint(
            target_dir, snapshot_format, kind, self.savepoint_results.append
        )

    def acknowledge(
        self,
        checkpoint_id: int,
        task: TaskKey,
        states: dict[str, OperatorSubtaskState] | None = None,
        state_size: int = 0,
    ) -> None:
        stats = SubtaskCheckpointStats(task[0], task[1], 1.0, 2.0, 0.0, state_size)
        self.coordinator.on_acknowledge(
            msg.AcknowledgeCheckpoint(0, task[0], task[1], checkpoint_id, states or {}, stats)
        )

    def acknowledge_all(self, checkpoint_id: int) -> None:
        for task in sorted(self.tasks):
            self.acknowledge(checkpoint_id, task)

    def decline(
        self,
        checkpoint_id: int,
        task: TaskKey | None = None,
        reason: msg.DeclineReason = msg.DeclineReason.SNAPSHOT_FAILED,
        detail: str = "x",
    ) -> None:
        vertex, subtask = task or sorted(self.tasks)[0]
        self.coordinator.on_decline(
            msg.DeclineCheckpoint(0, vertex, subtask, checkpoint_id, reason, detail)
        )

    def completed_ids(self) -> list[int]:
        return [c.checkpoint_id for c in self.coordinator.store.all()]

    def notified_complete(self) -> list[int]:
        return sorted({m.checkpoint_id for m in self.gateway.of_type(msg.NotifyCheckpointComplete)})

    def notified_aborted(self) -> list[int]:
        return sorted({m.checkpoint_id for m in self.gateway.of_type(msg.NotifyCheckpointAborted)})
