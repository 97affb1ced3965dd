"""Attempt supervision alone, on the test's thread: the supervisor with an in-memory control
channel, a deployer that records, a real checkpoint coordinator on in-memory storage. The test
queues what the slots and tasks say before ``supervise`` runs, which then returns with the
attempt's outcome."""

from __future__ import annotations

import pytest

from barrierflow.cluster.attempt_supervisor import AttemptSupervisor
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.operator_coordinator_host import OperatorCoordinatorHost
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from barrierflow.testing.in_memory_savepoint_storage import InMemorySavepointStorage
from barrierflow.testing.recording_deployer import RecordingDeployer
from tests.unit.cluster.test_job_master_fencing import job_plan


class Rig:
    def __init__(self, root, heartbeat_timeout_s: float = 10.0, deployer=None) -> None:
        self.plan = job_plan(str(root))
        self.plan.heartbeat_timeout_s = heartbeat_timeout_s
        graph = self.plan.graph
        self.network = InMemoryJobMasterNetwork()
        self.channel = ControlChannel(self.network)
        self.deployer = deployer or RecordingDeployer()
        self.canceled = False
        self.turns: int | None = None  # supervision turns before the job counts as canceled
        coordinator = CheckpointCoordinator(
            self.plan.job_id,
            graph.job_graph,
            InMemoryCheckpointStorage(),
            self.plan.coordinator_config,
            self.channel,
            InMemorySavepointStorage(),
        )
        view = JobStatusView(self.plan.job_id, graph.job_graph, self.plan.checkpoint_settings())
        host = OperatorCoordinatorHost(graph.job_graph, self.channel, self._unexpected)
        self.supervisor = AttemptSupervisor(
            self.plan, self.deployer, self.channel, coordinator, view, host, self._canceled
        )

    def _canceled(self) -> bool:
        if self.turns is not None:
            self.turns -= 1
            return self.turns < 0
        return self.canceled

    @staticmethod
    def _unexpected(error: str, trace: str, recoverable: bool) -> None:
        raise AssertionError(f"no operator coordinator in this job, yet: {error}")

    def from_task(self, number: int, task: tuple[str, int], message: msg.Message) -> None:
        self.network.deliver(msg.task_identity(number, *task), message)

    def from_slot(self, number: int, slot: int, message: msg.Message) -> None:
        self.network.deliver(msg.slot_identity(number, slot), message)

    def sent(self, kind: type) -> list[tuple[bytes, msg.Message]]:
        return [(to, m) for to, m in self.network.sent() if isinstance(m, kind)]


@pytest.fixture
def rig(tmp_path) -> Rig:
    return Rig(tmp_path)


def test_start_submits_every_subtask_with_the_attempts_number_and_token(rig):
    attempt = rig.supervisor.start(3, None, None)
    (deployed,) = rig.deployer.attempts
    descriptors = [d for slot in deployed.slots for d in slot.tasks]
    assert {(d.vertex, d.subtask) for d in descriptors} == attempt.tasks
    assert {(d.attempt, d.token) for d in descriptors} == {(3, attempt.token)}
    assert all(d.restore is None for d in descriptors)
    assert {s.jobmaster_endpoint for s in deployed.slots} == {rig.channel.endpoint}
    assert rig.channel.attempt == 3


def test_a_failed_task_ends_supervision_with_its_error(rig):
    attempt = rig.supervisor.start(1, None, None)
    task = sorted(attempt.tasks)[0]
    rig.from_task(1, task, msg.TaskFailed(1, *task, "boom", "Traceback: boom"))
    rig.supervisor.supervise(attempt)
    assert (attempt.failure.error, attempt.failure.traceback) == ("boom", "Traceback: boom")


def test_an_attempt_ends_when_every_task_and_its_deployment_finished(rig):
    attempt = rig.supervisor.start(1, None, None)
    for task in attempt.tasks:
        rig.from_task(1, task, msg.TaskRunning(1, *task))
        rig.from_task(1, task, msg.TaskFinished(1, *task))
    rig.deployer.attempts[0].end(None)
    rig.supervisor.supervise(attempt)
    assert attempt.failure is None and attempt.all_finished and attempt.spark_done


def test_a_deployment_that_ends_before_its_tasks_fails_the_attempt(rig):
    attempt = rig.supervisor.start(1, None, None)
    rig.deployer.attempts[0].end(None)
    rig.supervisor.supervise(attempt)
    assert attempt.failure.error == "the Spark job ended before all subtasks finished"
    assert attempt.failure.recoverable


def test_code_the_executors_cannot_load_is_a_failure_no_restart_fixes(rig):
    attempt = rig.supervisor.start(1, None, None)
    error = RuntimeError("...\nModuleNotFoundError: No module named 'my_job_functions'\n...")
    rig.deployer.attempts[0].end(error)
    rig.supervisor.supervise(attempt)
    assert "No module named 'my_job_functions'" in attempt.failure.error
    assert not attempt.failure.recoverable


def test_every_slot_learns_every_gate_endpoint_once_the_last_slot_registered(rig):
    attempt = rig.supervisor.start(1, None, None)
    slots = range(rig.plan.graph.num_slots)
    for slot in slots:
        assert not rig.sent(msg.GateEndpoints)  # a slot that started none may not connect yet
        gates = {f"v{slot}/0": f"tcp://h:{slot}"}
        rig.from_slot(1, slot, msg.SlotRegistered(1, slot, "elsewhere", slot, gates=gates))
        rig.turns = 1
        rig.supervisor.supervise(attempt)
    every = {f"v{slot}/0": f"tcp://h:{slot}" for slot in slots}
    assert sorted(rig.sent(msg.GateEndpoints)) == [
        (msg.slot_identity(1, slot), msg.GateEndpoints(1, every)) for slot in slots
    ]


def test_a_slot_that_falls_silent_fails_the_attempt(tmp_path):
    rig = Rig(tmp_path, heartbeat_timeout_s=0.05)
    attempt = rig.supervisor.start(1, None, None)
    rig.from_slot(1, 0, msg.SlotRegistered(1, 0, "elsewhere", 1))
    rig.from_slot(1, 0, msg.SlotHeartbeat(1, 0))
    rig.supervisor.supervise(attempt)
    assert attempt.failure.error == "slot 0 sent no heartbeat for 0.05 s"
    assert rig.sent(msg.Heartbeat)  # the JobMaster beat to the slot meanwhile


def test_older_attempts_are_told_to_cancel_and_newer_ones_ignored(rig):
    attempt = rig.supervisor.start(2, None, None)
    task = sorted(attempt.tasks)[0]
    rig.from_task(1, task, msg.TaskFailed(1, *task, "from a ghost", ""))
    rig.from_task(3, task, msg.TaskFailed(3, *task, "from nowhere", ""))
    rig.from_task(2, task, msg.TaskFailed(2, *task, "real", ""))
    rig.supervisor.supervise(attempt)
    assert attempt.failure.error == "real"
    (superseded,) = rig.sent(msg.CancelAttempt)
    assert superseded == (msg.task_identity(1, *task), msg.CancelAttempt(1, "superseded"))


def test_the_first_checkpoint_is_triggered_only_once_every_task_runs(rig):
    attempt = rig.supervisor.start(1, None, None)
    tasks = sorted(attempt.tasks)
    rig.from_task(1, tasks[0], msg.TaskRunning(1, *tasks[0]))
    rig.from_task(1, tasks[0], msg.TaskFailed(1, *tasks[0], "stop here", ""))
    rig.supervisor.supervise(attempt)
    assert rig.sent(msg.TriggerCheckpoint) == []

    attempt = rig.supervisor.start(2, None, None)
    for task in tasks:
        rig.from_task(2, task, msg.TaskRunning(2, *task))
    rig.turns = 5  # to take the messages in, and tick until the interval (50 ms) passed
    rig.supervisor.supervise(attempt)
    triggers = [m for _, m in rig.sent(msg.TriggerCheckpoint)]
    assert triggers and {m.attempt for m in triggers} == {2}


def test_stop_cancels_every_slot_and_task_and_waits_for_the_slots(rig):
    attempt = rig.supervisor.start(1, None, None)
    rig.from_slot(1, 0, msg.SlotRegistered(1, 0, "elsewhere", 1))
    rig.from_slot(1, 0, msg.SlotHeartbeat(1, 0))
    rig.from_task(1, sorted(attempt.tasks)[0], msg.TaskFailed(1, "v", 0, "boom", ""))
    rig.supervisor.supervise(attempt)
    rig.from_slot(1, 0, msg.SlotStopped(1, 0))
    rig.supervisor.stop(attempt, job_ended=True)
    cancels = dict(rig.sent(msg.CancelAttempt))
    expected = {msg.slot_identity(1, 0)} | {msg.task_identity(1, *t) for t in attempt.tasks}
    assert set(cancels) == expected
    assert all(m.job_ended for m in cancels.values())
    assert 0 in attempt.stopped_slots and rig.deployer.attempts[0].canceled


def test_a_cancel_ends_the_wait_before_a_restart(rig):
    rig.canceled = True
    rig.supervisor.wait(60.0)  # returns at once


class PreparingDeployer(RecordingDeployer):
    """A deployer that can start the next attempt's workers while a restart waits."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared: list[int] = []

    def prepare(self, num_slots: int) -> None:
        self.prepared.append(num_slots)


@pytest.mark.parametrize(("delay_s", "prepared"), [(0.6, True), (0.2, False), (0.0, False)])
def test_a_restart_delay_long_enough_starts_the_next_attempts_workers(tmp_path, delay_s, prepared):
    deployer = PreparingDeployer()
    rig = Rig(tmp_path, deployer=deployer)
    rig.supervisor.wait(delay_s)
    assert deployer.prepared == ([rig.plan.graph.num_slots] if prepared else [])
