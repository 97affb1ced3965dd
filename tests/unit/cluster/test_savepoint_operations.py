"""Savepoint operations alone: requests from this process and from the command line become
the checkpoint coordinator's savepoint requests of the right kind, only with the job's secret,
and their outcome reaches the requester."""

from __future__ import annotations

import pytest

from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.savepoint_operations import SavepointOperations
from barrierflow.control import messages as msg
from barrierflow.coordination.savepoint_completion import SavepointResult
from barrierflow.errors import SavepointError
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from tests.unit.cluster.test_job_master_fencing import job_plan

SECRET = "s3cret"
CLI = b"command line"


class RecordingCoordinator:
    def __init__(self) -> None:
        self.requests: list[tuple] = []

    def trigger_savepoint(self, target_dir, snapshot_format, kind, on_done) -> None:
        self.requests.append((target_dir, snapshot_format, kind, on_done))


class Rig:
    def __init__(self, root) -> None:
        self.plan = job_plan(str(root))
        self.plan.savepoint_dir = "/configured/savepoints"
        self.network = InMemoryJobMasterNetwork()
        self.channel = ControlChannel(self.network)
        self.coordinator = RecordingCoordinator()
        self.canceled = False
        self.due = 0
        self.operations = SavepointOperations(
            self.plan,
            self.coordinator,
            self.channel,
            lambda job_id, secret: (job_id, secret) == (self.plan.job_id, SECRET),
            lambda: self.canceled,
            self._due_now,
        )

    def _due_now(self) -> None:
        self.due += 1

    def run_mails(self) -> None:
        """What the JobMaster's thread does between messages."""
        for mail in self.channel.mailbox.drain():
            mail()

    def from_command_line(self, request: msg.TriggerSavepoint) -> list:
        """Delivers ``request``; returns what reached the JobMaster beyond it (nothing)."""
        self.network.deliver(CLI, request)
        return list(self.channel.incoming())

    def replies(self) -> list[msg.SavepointReply]:
        return [m for to, m in self.network.sent() if to == CLI]


@pytest.fixture
def rig(tmp_path) -> Rig:
    return Rig(tmp_path)


@pytest.mark.parametrize(
    ("stop", "drain", "kind"),
    [
        (False, False, CheckpointKind.SAVEPOINT),
        (True, False, CheckpointKind.SUSPEND),
        (True, True, CheckpointKind.TERMINATE),
    ],
)
def test_a_request_of_this_process_becomes_a_savepoint_of_its_kind(rig, stop, drain, kind):
    future = rig.operations.trigger(None, SnapshotFormat.NATIVE, stop=stop, drain=drain)
    assert rig.coordinator.requests == []  # handed to the JobMaster's thread
    rig.run_mails()
    ((target, snapshot_format, asked, on_done),) = rig.coordinator.requests
    assert (target, snapshot_format, asked) == (
        "/configured/savepoints",
        SnapshotFormat.NATIVE,
        kind,
    )
    assert rig.due == 1
    on_done(SavepointResult(5, path="/configured/savepoints/savepoint-x"))
    assert future.result(0) == "/configured/savepoints/savepoint-x"


def test_a_failed_savepoint_fails_the_future_with_the_reason(rig):
    future = rig.operations.trigger("/elsewhere", SnapshotFormat.CANONICAL)
    rig.run_mails()
    rig.coordinator.requests[0][3](SavepointResult(5, error="declined by v0[1]"))
    with pytest.raises(SavepointError, match="declined by v0\\[1\\]"):
        future.result(0)


def test_a_request_after_the_job_ended_fails_at_once(rig):
    rig.channel.close()
    future = rig.operations.trigger(None, SnapshotFormat.CANONICAL)
    with pytest.raises(SavepointError, match="is not running"):
        future.result(0)


def test_a_stop_with_drain_ends_the_input_of_every_source_of_the_running_attempt(rig):
    rig.channel.attempt = 4
    rig.operations.trigger(None, SnapshotFormat.CANONICAL, stop=True, drain=True)
    rig.run_mails()
    ends = [(to, m) for to, m in rig.network.sent() if isinstance(m, msg.EndInput)]
    sources = rig.plan.graph.source_subtasks
    assert ends == [(msg.task_identity(4, *s), msg.EndInput(4)) for s in sources]


def test_no_savepoint_while_the_job_is_being_canceled(rig):
    rig.canceled = True
    future = rig.operations.trigger(None, SnapshotFormat.CANONICAL)
    rig.run_mails()
    assert rig.coordinator.requests == []
    with pytest.raises(SavepointError, match="is being canceled"):
        future.result(0)


def test_a_command_line_request_needs_the_job_id_and_secret(rig):
    job = rig.plan.job_id
    for job_id, secret in ((job, "wrong"), ("other-job", SECRET)):
        request = msg.TriggerSavepoint(0, job_id, secret, "", SnapshotFormat.CANONICAL)
        assert rig.from_command_line(request) == []
    assert rig.coordinator.requests == []
    assert rig.replies() == [msg.SavepointReply(0, None, "wrong job id or secret")] * 2


def test_a_command_line_request_is_answered_when_the_savepoint_completed(rig):
    request = msg.TriggerSavepoint(
        0, rig.plan.job_id, SECRET, "/target", SnapshotFormat.NATIVE, stop=True
    )
    assert rig.from_command_line(request) == []
    ((target, _, kind, on_done),) = rig.coordinator.requests
    assert (target, kind) == ("/target", CheckpointKind.SUSPEND)
    assert rig.replies() == []
    on_done(SavepointResult(9, path="/target/savepoint-y"))
    assert rig.replies() == [msg.SavepointReply(0, "/target/savepoint-y", None)]
