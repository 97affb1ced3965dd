"""Where a running job is reached from outside, alone: the address file it publishes (endpoint,
secret, REST URL), the REST server's lifecycle, and the command line's ping and cancel, which
need the secret the file holds."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster import job_master_client
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.job_endpoints import JobEndpoints, refuse_if_still_running
from barrierflow.cluster.job_master_network import ZmqJobMasterNetwork
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.rest.server import RestConfig
from barrierflow.control import messages as msg
from barrierflow.errors import JobExecutionError
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from tests.unit.cluster.test_job_master_fencing import job_plan

CLI = b"command line"


class NoControl:
    def cancel(self) -> None: ...

    def trigger_savepoint(self, *args): ...

    def is_secret(self, secret: str) -> bool:
        return False


class Rig:
    def __init__(self, root, with_storage: bool = True, rest: RestConfig | None = None) -> None:
        self.plan = job_plan(str(root))
        if rest is not None:
            self.plan.rest = rest
        self.storage = CheckpointDirectory(f"{root}/fencing") if with_storage else None
        self.network = InMemoryJobMasterNetwork()
        self.channel = ControlChannel(self.network)
        self.cancels = 0
        self.endpoints = JobEndpoints(self.plan, self.storage, self.channel, self._cancel)
        view = JobStatusView(
            self.plan.job_id, self.plan.graph.job_graph, self.plan.checkpoint_settings()
        )
        self.endpoints.open(view, NoControl())

    def _cancel(self) -> None:
        self.cancels += 1

    def address(self) -> dict | None:
        data = self.storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE)
        return json.loads(data) if data is not None else None

    def ask(self, request: msg.Message) -> list[msg.AnyMessage]:
        """The replies to ``request``; it never reaches the JobMaster's dispatch."""
        self.network.deliver(CLI, request)
        assert list(self.channel.incoming()) == []
        return [m for to, m in self.network.sent() if to == CLI]


def test_the_address_file_names_the_endpoint_and_the_secret_that_acts_on_the_job(tmp_path):
    rig = Rig(tmp_path)
    address = rig.address()
    assert address["endpoint"] == rig.channel.endpoint and address["job_id"] == "fencing"
    assert address["rest_url"] is None  # no REST server unless asked for
    assert rig.endpoints.authorized("fencing", address["secret"])
    assert not rig.endpoints.authorized("fencing", address["secret"] + "x")
    assert not rig.endpoints.authorized("other", address["secret"])
    rig.endpoints.withdraw_address()
    assert rig.address() is None


def test_without_a_checkpoint_directory_nothing_is_published(tmp_path):
    rig = Rig(tmp_path, with_storage=False)
    rig.endpoints.withdraw_address()  # nothing to remove
    assert not (tmp_path / "fencing").exists()


def test_ping_is_answered_for_this_job_only(tmp_path):
    rig = Rig(tmp_path)
    assert rig.ask(msg.PingJob(0, "other")) == []
    assert rig.ask(msg.PingJob(0, "fencing")) == [msg.PingJobReply(0, "fencing")]


def test_cancel_from_the_command_line_needs_the_secret(tmp_path):
    rig = Rig(tmp_path)
    refused = rig.ask(msg.CancelJob(0, "fencing", "guess"))
    assert refused == [msg.CancelJobReply(0, False, "wrong job id or secret")]
    assert rig.cancels == 0
    replies = rig.ask(msg.CancelJob(0, "fencing", rig.address()["secret"]))
    assert replies[-1] == msg.CancelJobReply(0, True, "")
    assert rig.cancels == 1


def test_the_rest_server_runs_from_open_to_close_and_is_in_the_address_file(tmp_path):
    rig = Rig(tmp_path, rest=RestConfig("127.0.0.1", 0, port_is_default=False))
    url = rig.address()["rest_url"]
    assert url == rig.endpoints.rest_url and url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(f"{url}/jobs/overview", timeout=5) as response:
        assert response.status == 200
    rig.endpoints.close_rest()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/jobs/overview", timeout=2)


def test_a_job_is_not_taken_over_while_its_job_master_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(job_master_client, "PING_TIMEOUT_S", 0.2)
    storage = CheckpointDirectory(f"{tmp_path}/fencing")
    refuse_if_still_running(storage, "fencing")  # no address file: nobody to ask

    plan = job_plan(str(tmp_path))
    channel = ControlChannel(ZmqJobMasterNetwork("127.0.0.1"))
    endpoints = JobEndpoints(plan, storage, channel, lambda: None)
    endpoints.open(None, NoControl())
    stop = threading.Event()

    def answer() -> None:  # the running JobMaster's loop, as far as requests go
        while not stop.is_set():
            if channel.router.poll(20):
                list(channel.incoming())

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        with pytest.raises(JobExecutionError, match="job fencing is still running"):
            refuse_if_still_running(storage, "fencing")
    finally:
        stop.set()
        thread.join(5)
        channel.close()
    refuse_if_still_running(storage, "fencing")  # an address nobody answers at: taken over
