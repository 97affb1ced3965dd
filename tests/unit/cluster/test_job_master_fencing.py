"""The JobMaster's fencing, without Spark and without a network: it runs on its own thread over
an in-memory control channel and a deployer that only records; the test plays the slots and
tasks of each attempt. Messages of an older attempt are dropped and their sender is told to
cancel: a stale acknowledgement cannot complete a checkpoint of the running attempt."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.restart_strategy import FixedDelayRestart
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import JobCanceledError
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.stream_graph import build_stream_graph
from barrierflow.runtime.task_descriptor import TaskConfig
from barrierflow.state.backends import StateBackendConfig
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from barrierflow.testing.recording_deployer import DeployedAttempt, RecordingDeployer


def job_plan(root: str) -> JobPlan:
    env = StreamExecutionEnvironment()
    env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink()).set_parallelism(1)
    graph = build_execution_graph(
        build_job_graph(build_stream_graph("fencing", env._transformations, 2, 128))
    )
    return JobPlan(
        job_id="fencing",
        job_name="fencing",
        graph=graph,
        task_config=TaskConfig(
            buffer_size=1024,
            buffer_timeout_s=0.1,
            initial_credit=2,
            checkpointing=True,
            exactly_once=True,
            storage_uri=f"{root}/fencing",
            inline_threshold=1024,
            write_buffer_size=4096,
            max_parallelism=128,
            state_backend=StateBackendConfig(),
        ),
        coordinator_config=CoordinatorConfig(0.05, 60.0, 0.0, 1, 0, 1),
        restart_strategy=FixedDelayRestart(attempts=1, delay_s=0.0),
    )


class Cluster:
    """Plays the slots and tasks of every attempt of a JobMaster running on its own thread."""

    def __init__(self, root) -> None:
        self.network = InMemoryJobMasterNetwork()
        self.deployer = RecordingDeployer()
        self.job_master = JobMaster(job_plan(str(root)), self.deployer, self.network)
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.outcome.append(self.job_master.run())
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            self.outcome.append(e)

    def start(self, number: int) -> DeployedAttempt:
        attempt = self.deployer.wait_for_attempt(number)
        for slot in attempt.slots:
            self.from_slot(
                attempt, slot.slot, msg.SlotRegistered(number, slot.slot, "elsewhere", 1)
            )
        for vertex, subtask in attempt.tasks:
            self.from_task(number, vertex, subtask, msg.TaskRunning(number, vertex, subtask))
        return attempt

    def from_slot(self, attempt: DeployedAttempt, slot: int, message: msg.Message) -> None:
        self.network.deliver(msg.slot_identity(attempt.number, slot), message)

    def from_task(self, number: int, vertex: str, subtask: int, message: msg.Message) -> None:
        self.network.deliver(msg.task_identity(number, vertex, subtask), message)

    def acknowledge(self, number: int, tasks_of: DeployedAttempt, checkpoint_id: int) -> None:
        """Every task of ``tasks_of`` acknowledges, claiming to belong to attempt ``number``."""
        for vertex, subtask in tasks_of.tasks:
            stats = SubtaskCheckpointStats(vertex, subtask, 0.0, 0.0, 0.0, 0)
            ack = msg.AcknowledgeCheckpoint(number, vertex, subtask, checkpoint_id, {}, stats)
            self.from_task(number, vertex, subtask, ack)

    def stop_when_told(self, attempt: DeployedAttempt) -> None:
        """Each slot confirms it stopped once the JobMaster cancels the attempt."""
        for slot in attempt.slots:
            identity = msg.slot_identity(attempt.number, slot.slot)
            wait_for(lambda i=identity: self.sent(i, msg.CancelAttempt))
            self.from_slot(attempt, slot.slot, msg.SlotStopped(attempt.number, slot.slot))

    def sent(self, identity: bytes, kind: type) -> list:
        return [m for to, m in self.network.sent() if to == identity and isinstance(m, kind)]

    def superseded(self, identity: bytes) -> list[msg.CancelAttempt]:
        return [m for m in self.sent(identity, msg.CancelAttempt) if m.reason == "superseded"]

    def all_sent(self, kind: type) -> list:
        return [m for _, m in self.network.sent() if isinstance(m, kind)]


def wait_for(condition: Callable[[], object], timeout_s: float = 10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.005)
    raise AssertionError("timed out waiting")


def test_messages_of_an_older_attempt_are_dropped_and_their_senders_told_to_cancel(tmp_path):
    cluster = Cluster(tmp_path)
    first = cluster.start(1)
    cluster.from_task(1, *first.tasks[0], msg.TaskFailed(1, *first.tasks[0], "boom", ""))
    cluster.stop_when_told(first)
    second = cluster.start(2)
    assert first.canceled and second.number == 2

    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    assert trigger.attempt == 2
    cluster.acknowledge(1, first, trigger.checkpoint_id)  # ghosts of the failed attempt
    for vertex, subtask in first.tasks:
        # Told once more, now as a ghost: the reply also shows its ack was handled (dropped).
        ghost = msg.task_identity(1, vertex, subtask)
        superseded = wait_for(lambda g=ghost: cluster.superseded(g))
        assert [m.attempt for m in superseded] == [1]
    storage = CheckpointDirectory(f"{tmp_path}/fencing")
    assert cluster.all_sent(msg.NotifyCheckpointComplete) == []
    assert storage.list_completed() == []

    cluster.acknowledge(2, second, trigger.checkpoint_id)
    notified = wait_for(lambda: cluster.all_sent(msg.NotifyCheckpointComplete))
    assert {(m.attempt, m.checkpoint_id) for m in notified} == {(2, trigger.checkpoint_id)}
    assert storage.list_completed() == [trigger.checkpoint_id]

    cluster.job_master.cancel()
    cluster.stop_when_told(second)
    cluster.thread.join(10)
    assert isinstance(cluster.outcome[0], JobCanceledError)


def test_a_message_of_a_newer_attempt_than_the_running_one_is_dropped_silently(tmp_path):
    cluster = Cluster(tmp_path)
    first = cluster.start(1)
    vertex, subtask = first.tasks[0]
    cluster.from_task(2, vertex, subtask, msg.TaskFailed(2, vertex, subtask, "from nowhere", ""))
    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    assert trigger.attempt == 1  # the attempt still runs: the stray failure was not taken
    assert cluster.sent(msg.task_identity(2, vertex, subtask), msg.CancelAttempt) == []
    cluster.job_master.cancel()
    cluster.stop_when_told(first)
    cluster.thread.join(10)
    with pytest.raises(JobCanceledError):
        raise cluster.outcome[0]


def test_collected_records_are_delivered_only_with_the_attempts_token(tmp_path):
    import pickle

    from barrierflow.cluster import collected_records
    from barrierflow.cluster.collected_records import QueueCollector

    collector = QueueCollector()
    collected_records.register(collector)
    cluster = Cluster(tmp_path)
    try:
        first = cluster.start(1)
        token = first.slots[0].tasks[0].token
        vertex, subtask = first.tasks[0]
        for t, delivery, payload in ((token + 1, "forged", b"not a pickle"),
                                     (token, "real", pickle.dumps(["ok"]))):  # fmt: skip
            cluster.from_task(1, vertex, subtask, msg.CollectedRecords(
                1, t, collector.id, delivery, 0, 1, payload))  # fmt: skip
        assert wait_for(lambda: not collector.records.empty())
        assert collector.records.get_nowait() == "ok" and collector.records.empty()
    finally:
        collected_records.unregister(collector.id)
        cluster.job_master.cancel()
        cluster.stop_when_told(first)
        cluster.thread.join(10)
