"""Operator coordinators on the JobMaster, without Spark: the JobMaster runs on its own thread
over an in-memory control channel (as in test_job_master_fencing.py) and the test plays the
tasks. A toy coordinator counts the events its subtasks send, answers each, greets each subtask
when it runs, and snapshots its count: events flow both ways, its state is in the checkpoint
and comes back after a failover, events of a failed attempt never reach it, and a coordinator
that raises fails the attempt, naming its operator."""

from __future__ import annotations

import threading

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg
from barrierflow.control.operator_coordinator import (
    CoordinatorProvider,
    OperatorCoordinator,
    OperatorCoordinatorContext,
)
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import JobExecutionError
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from barrierflow.testing.recording_deployer import DeployedAttempt, RecordingDeployer
from tests.unit.cluster.test_job_master_fencing import Cluster, job_plan, wait_for

UID = "numbers"


class Counter(OperatorCoordinator):
    """Counts events; ``fail_in``: the method that raises, ``failures`` times."""

    def __init__(
        self, context: OperatorCoordinatorContext, fail_in: str | None, failures: int = 99
    ) -> None:
        self.context = context
        self.fail_in = fail_in
        self.failures = failures
        self.count = 0
        self.calls: list[tuple] = []
        self.threads: set[str] = set()

    def _called(self, *call) -> None:
        self.calls.append(call)
        self.threads.add(threading.current_thread().name)
        if call[0] == self.fail_in and self.failures > 0:
            self.failures -= 1
            raise RuntimeError(f"boom in {call[0]}")

    def start(self) -> None:
        self._called("start")

    def restore_state(self, checkpoint_id, state) -> None:
        self._called("restore_state", checkpoint_id, state)
        self.count = int(state) if state else 0

    def subtask_ready(self, subtask: int) -> None:
        self._called("subtask_ready", subtask)
        self.context.send_event(subtask, b"hello %d" % self.count)

    def handle_event(self, subtask: int, payload: bytes) -> None:
        self._called("handle_event", subtask, payload)
        self.count += 1
        self.context.send_event(subtask, b"got " + payload)

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        self._called("snapshot_state", checkpoint_id)
        return str(self.count).encode()

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._called("complete", checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        self._called("aborted", checkpoint_id)

    def close(self) -> None:
        self._called("close")


class CoordinatedSequence(NumberSequenceSource, CoordinatorProvider):
    def __init__(self, fail_in: str | None = None, failures: int = 99) -> None:
        super().__init__(1, 10)
        self.fail_in = fail_in
        self.failures = failures
        self.created: list[Counter] = []

    def create_coordinator(self, context: OperatorCoordinatorContext) -> Counter:
        self.created.append(Counter(context, self.fail_in, self.failures))
        return self.created[-1]


class CoordinatedCluster(Cluster):
    """``Cluster`` whose job reads a ``CoordinatedSequence`` at parallelism 2."""

    def __init__(self, root, source: CoordinatedSequence) -> None:
        from barrierflow.cluster.job_master import JobMaster

        env = StreamExecutionEnvironment()
        env.from_source(source, "s").uid(UID).sink_to(DiscardingSink()).set_parallelism(1)
        plan = job_plan(str(root))
        plan.graph = build_execution_graph(
            build_job_graph(build_stream_graph("fencing", env._transformations, 2, 128))
        )
        self.source = source
        self.network = InMemoryJobMasterNetwork()
        self.deployer = RecordingDeployer()
        self.job_master = JobMaster(plan, self.deployer, self.network)
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, name="jobmaster", daemon=True)
        self.thread.start()

    @property
    def coordinator(self) -> Counter:
        return wait_for(lambda: self.source.created)[0]

    def source_tasks(self, attempt: DeployedAttempt) -> list[tuple[str, int]]:
        return sorted(t for t in attempt.tasks if t[0] == self.source_vertex)

    @property
    def source_vertex(self) -> str:
        return self.job_master.plan.graph.source_subtasks[0][0]

    def event(self, number: int, subtask: int, payload: bytes) -> None:
        vertex = self.source_vertex
        self.from_task(
            number,
            vertex,
            subtask,
            msg.OperatorEventToCoordinator(number, vertex, subtask, UID, payload),
        )

    def events_to(self, number: int, subtask: int) -> list[bytes]:
        identity = msg.task_identity(number, self.source_vertex, subtask)
        return [m.payload for m in self.sent(identity, msg.OperatorEventToTask)]

    def end(self, attempt: DeployedAttempt) -> None:
        self.job_master.cancel()
        self.stop_when_told(attempt)
        self.thread.join(10)


def calls(coordinator: Counter, name: str) -> list[tuple]:
    return [c[1:] for c in coordinator.calls if c[0] == name]


def test_events_flow_both_ways_and_each_subtask_is_greeted_when_it_runs(tmp_path):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence())
    first = cluster.start(1)
    coordinator = cluster.coordinator
    assert coordinator.calls[:2] == [("restore_state", None, None), ("start",)]
    assert sorted(wait_for(lambda: len(calls(coordinator, "subtask_ready")) == 2 and
                           calls(coordinator, "subtask_ready"))) == [(0,), (1,)]  # fmt: skip
    assert cluster.events_to(1, 0) == [b"hello 0"]

    cluster.event(1, 1, b"split request")
    assert wait_for(lambda: cluster.events_to(1, 1)) and wait_for(
        lambda: len(cluster.events_to(1, 1)) == 2
    )
    assert cluster.events_to(1, 1) == [b"hello 0", b"got split request"]
    (event,) = [
        m for m in cluster.all_sent(msg.OperatorEventToTask) if m.payload == b"got split request"
    ]
    assert (event.attempt, event.vertex, event.subtask, event.operator_uid) == (
        1,
        cluster.source_vertex,
        1,
        UID,
    )
    assert coordinator.threads == {"jobmaster"}
    cluster.end(first)
    assert calls(coordinator, "close") == [()]


def test_state_is_checkpointed_with_the_trigger_and_restored_after_a_failover(tmp_path):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence())
    first = cluster.start(1)
    coordinator = cluster.coordinator
    for i in range(3):
        cluster.event(1, 0, b"e%d" % i)
    wait_for(lambda: coordinator.count == 3)
    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    cid = trigger.checkpoint_id
    assert calls(coordinator, "snapshot_state")[0] == (cid,)
    cluster.acknowledge(1, first, cid)
    wait_for(lambda: (cid,) in calls(coordinator, "complete"))
    metadata = CheckpointDirectory(f"{tmp_path}/fencing").read_metadata(cid)
    assert metadata.operator(UID).coordinator.data == b"3"

    cluster.event(1, 1, b"after the checkpoint")  # forgotten by the restore
    wait_for(lambda: coordinator.count == 4)
    vertex, subtask = cluster.source_tasks(first)[0]
    cluster.from_task(1, vertex, subtask, msg.TaskFailed(1, vertex, subtask, "boom", ""))
    cluster.stop_when_told(first)
    second = cluster.start(2)
    restores = wait_for(lambda: calls(coordinator, "restore_state")[1:])
    assert restores == [(cid, b"3")] and coordinator.count in (3, 4)
    assert calls(coordinator, "start") == [()]  # started once, restored per attempt
    assert wait_for(lambda: cluster.events_to(2, 0)) == [b"hello 3"]
    cluster.end(second)


def test_events_of_a_failed_attempt_never_reach_the_coordinator(tmp_path):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence())
    first = cluster.start(1)
    coordinator = cluster.coordinator
    vertex, subtask = cluster.source_tasks(first)[0]
    cluster.from_task(1, vertex, subtask, msg.TaskFailed(1, vertex, subtask, "boom", ""))
    cluster.stop_when_told(first)
    second = cluster.start(2)
    wait_for(lambda: cluster.events_to(2, 0))

    cluster.event(1, 0, b"ghost")  # from a subtask of attempt 1 that did not stop yet
    ghost = msg.task_identity(1, vertex, 0)
    wait_for(lambda: cluster.superseded(ghost))
    cluster.event(2, 0, b"live")
    wait_for(lambda: calls(coordinator, "handle_event"))
    assert calls(coordinator, "handle_event") == [(0, b"live")]
    cluster.end(second)


def test_an_event_for_a_subtask_not_running_yet_is_sent_before_it_is_greeted(tmp_path):
    class Eager(Counter):
        def restore_state(self, checkpoint_id, state) -> None:
            super().restore_state(checkpoint_id, state)
            self.context.send_event(1, b"early")

    class EagerSequence(CoordinatedSequence):
        def create_coordinator(self, context):
            self.created.append(Eager(context, None))
            return self.created[-1]

    cluster = CoordinatedCluster(tmp_path, EagerSequence())
    first = cluster.start(1)
    assert wait_for(lambda: len(cluster.events_to(1, 1)) == 2 and cluster.events_to(1, 1)) == [
        b"early",
        b"hello 0",
    ]
    cluster.end(first)


@pytest.mark.parametrize("method", ["handle_event", "snapshot_state", "complete"])
def test_a_coordinator_that_raises_fails_the_attempt_naming_its_operator(tmp_path, method):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence(fail_in=method))
    first = cluster.start(1)
    cluster.event(1, 0, b"x")
    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint) or method != "complete")
    if method == "complete":
        cluster.acknowledge(1, first, trigger[0].checkpoint_id)
    cluster.stop_when_told(first)
    assert wait_for(lambda: first.canceled)
    second = cluster.start(2)  # the restart strategy allows one restart
    cluster.event(2, 0, b"x")
    if method == "complete":
        trigger = wait_for(lambda: [t for t in cluster.all_sent(msg.TriggerCheckpoint)
                                    if t.attempt == 2])  # fmt: skip
        cluster.acknowledge(2, second, trigger[0].checkpoint_id)
    cluster.stop_when_told(second)
    cluster.thread.join(10)
    (error,) = cluster.outcome
    assert isinstance(error, JobExecutionError)
    assert f"the coordinator of operator {UID!r}" in str(error) and f"boom in {method}" in str(
        error
    )
    if method == "snapshot_state":  # nothing was triggered with a failed snapshot
        assert cluster.all_sent(msg.TriggerCheckpoint) == []


def test_a_coordinator_that_fails_to_restore_fails_the_attempt_before_it_is_deployed(tmp_path):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence("restore_state", failures=1))
    attempt = cluster.deployer.wait_for_attempt(1)
    assert attempt.number == 2  # attempt 1 failed before anything was submitted
    coordinator = cluster.coordinator
    assert [c[0] for c in coordinator.calls[:3]] == ["restore_state", "restore_state", "start"]
    for vertex, subtask in attempt.tasks:
        cluster.from_task(2, vertex, subtask, msg.TaskRunning(2, vertex, subtask))
    assert wait_for(lambda: cluster.events_to(2, 0)) == [b"hello 0"]
    cluster.job_master.cancel()
    cluster.thread.join(10)


def test_an_event_for_an_operator_without_coordinator_fails_the_job_without_restart(tmp_path):
    cluster = CoordinatedCluster(tmp_path, CoordinatedSequence())
    first = cluster.start(1)
    vertex = cluster.source_vertex
    cluster.from_task(
        1, vertex, 0, msg.OperatorEventToCoordinator(1, vertex, 0, "no-such-uid", b"x")
    )
    cluster.stop_when_told(first)
    cluster.thread.join(10)
    (error,) = cluster.outcome
    assert isinstance(error, JobExecutionError) and "'no-such-uid'" in str(error)
    assert "not one a restart can fix" in str(error)
    assert len(cluster.deployer.attempts) == 1


def test_periodic_calls_run_on_the_job_masters_thread_while_the_attempt_runs(tmp_path):
    ticks: list[str] = []

    class Periodic(Counter):
        def start(self) -> None:
            super().start()
            self.context.call_periodically(
                0.01, lambda: ticks.append(threading.current_thread().name)
            )
            threading.Thread(
                target=lambda: self.context.call_soon(lambda: ticks.append("soon"))
            ).start()

    class PeriodicSequence(CoordinatedSequence):
        def create_coordinator(self, context):
            self.created.append(Periodic(context, None))
            return self.created[-1]

    cluster = CoordinatedCluster(tmp_path, PeriodicSequence())
    first = cluster.start(1)
    wait_for(lambda: ticks.count("jobmaster") >= 3 and "soon" in ticks)
    assert set(ticks) == {"jobmaster", "soon"}
    cluster.end(first)
