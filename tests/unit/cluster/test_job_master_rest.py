"""The JobMaster's REST server, without Spark: the JobMaster runs on its own thread over an
in-memory control channel (as in test_job_master_fencing.py) with a real HTTP server on a free
port; the test plays the slots and tasks. Heartbeat metrics reach ``/metrics``, checkpoint
figures equal the history on storage, savepoint and cancel need the job's secret, and the
server's URL is in the address file next to the checkpoints."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.rest import server as rest_server
from barrierflow.cluster.rest.rest_api import RestApi
from barrierflow.cluster.rest.server import RestConfig, RestServer, RestServerError
from barrierflow.control import messages as msg
from barrierflow.errors import JobCanceledError
from barrierflow.testing.in_memory_network import InMemoryJobMasterNetwork
from barrierflow.testing.recording_deployer import RecordingDeployer
from tests.unit.cluster.test_job_master_fencing import Cluster, job_plan, wait_for


class RestCluster(Cluster):
    """``Cluster`` with the REST server on a free port of 127.0.0.1."""

    def __init__(self, root) -> None:
        self.network = InMemoryJobMasterNetwork()
        self.deployer = RecordingDeployer()
        plan = job_plan(str(root))
        plan.rest = RestConfig("127.0.0.1", 0, port_is_default=False)
        plan.savepoint_dir = str(root / "savepoints")
        self.job_master = JobMaster(plan, self.deployer, self.network)
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def heartbeat(self, attempt, records: int) -> None:
        """Every slot reports its subtasks: ``records`` in and out, half of the time busy."""
        for slot in attempt.slots:
            tasks = [
                msg.SubtaskMetrics(d.vertex, d.subtask, records, records, records / 2, 0.0,
                                   records / 2)
                for d in slot.tasks
            ]  # fmt: skip
            self.from_slot(attempt, slot.slot, msg.SlotHeartbeat(attempt.number, slot.slot, tasks))


def request(url: str, method: str = "GET", secret: str | None = None, body: dict | None = None):
    """(status, parsed JSON or text) of one HTTP request."""
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    _, text = request(f"{url}/metrics")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def job_metric(samples: dict, name: str) -> float:
    (value,) = [v for (n, _), v in samples.items() if n == f"barrierflow_jobmanager_job_{name}"]
    return value


def test_rest_server_of_a_running_job_metrics_checkpoints_savepoint_and_cancel(tmp_path):
    cluster = RestCluster(tmp_path)
    attempt = cluster.start(1)
    storage = CheckpointDirectory(f"{tmp_path}/fencing")
    address = wait_for(lambda: storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE))
    address = json.loads(address)
    url, secret = address["rest_url"], address["secret"]
    assert url == cluster.job_master.rest_url and url.startswith("http://127.0.0.1:")

    # metrics from heartbeats: the counters grow between two scrapes
    cluster.heartbeat(attempt, 0)
    cluster.heartbeat(attempt, 100)
    first = wait_for(lambda: (s := scrape(url)) and _records_in(s) and s)
    cluster.heartbeat(attempt, 300)
    second = wait_for(lambda: (s := scrape(url)) and _records_in(s) > _records_in(first) and s)
    assert _records_in(second) == 300 * len(attempt.tasks)

    # a completed checkpoint: REST and /metrics show what the history on storage says
    trigger = wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    cluster.acknowledge(1, attempt, trigger.checkpoint_id)
    wait_for(lambda: storage.list_completed())
    history = storage.read_history().records
    (done,) = [r for r in history if r.checkpoint_id == trigger.checkpoint_id]
    _, checkpoints = request(f"{url}/jobs/fencing/checkpoints")
    latest = checkpoints["latest"]["completed"]
    assert latest["id"] == done.checkpoint_id
    assert latest["end_to_end_duration"] == round(done.duration_ms)
    assert latest["state_size"] == done.state_size
    assert latest["trigger_timestamp"] == done.trigger_timestamp_ms
    metrics = scrape(url)
    assert job_metric(metrics, "lastCheckpointDuration") == round(done.duration_ms)
    assert job_metric(metrics, "numberOfCompletedCheckpoints") == checkpoints["counts"]["completed"]

    # savepoint: refused without the secret or with a wrong one, taken with it
    savepoints = f"{url}/jobs/fencing/savepoints"
    assert request(savepoints, "POST", body={})[0] == 401
    assert request(savepoints, "POST", "wrong", body={})[0] == 403
    status, answer = request(savepoints, "POST", secret, body={"formatType": "CANONICAL"})
    assert status == 202
    savepoint = wait_for(
        lambda: [t for t in cluster.all_sent(msg.TriggerCheckpoint) if t.options.is_savepoint]
    )[0]
    cluster.acknowledge(1, attempt, savepoint.checkpoint_id)
    done = wait_for(
        lambda: (
            (r := request(f"{savepoints}/{answer['request-id']}")[1])["status"]["id"] == "COMPLETED"
            and r
        )
    )
    assert done["operation"]["location"].startswith(str(tmp_path / "savepoints"))

    # cancel: refused without the secret, done with it
    cancel = f"{url}/jobs/fencing/cancel"
    assert request(cancel, "POST")[0] == 401
    assert cluster.thread.is_alive()
    assert request(cancel, "POST", secret)[0] == 202
    cluster.stop_when_told(attempt)
    cluster.thread.join(10)
    assert isinstance(cluster.outcome[0], JobCanceledError)
    with pytest.raises(urllib.error.URLError):  # the server went with the job
        urllib.request.urlopen(f"{url}/jobs/overview", timeout=2)


def _records_in(samples: dict) -> float:
    return sum(
        v for (n, _), v in samples.items() if n == "barrierflow_taskmanager_job_task_numRecordsIn"
    )


class _NoControl:
    def cancel(self) -> None: ...

    def trigger_savepoint(self, *args): ...

    def is_secret(self, secret: str) -> bool:
        return False


def _api() -> RestApi:
    from barrierflow.cluster.job_status_view import JobStatusView
    from tests.unit.cluster.status_view_data import SETTINGS, two_vertex_graph

    return RestApi(JobStatusView("j", two_vertex_graph(), SETTINGS), _NoControl(), True)


def test_a_configured_port_that_is_taken_is_an_error_that_says_what_to_do():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RestServerError, match=rf"127.0.0.1:{port}: the port is taken.*rest"):
            RestServer(_api(), RestConfig("127.0.0.1", port, port_is_default=False))


def test_the_default_port_when_taken_is_the_next_free_one_of_its_range(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(rest_server, "DEFAULT_PORT", port)
        monkeypatch.setattr(rest_server, "DEFAULT_PORT_RANGE_END", port + 20)
        server = RestServer(_api(), RestConfig("127.0.0.1", port, port_is_default=True))
        try:
            assert port < server.port <= port + 20
            server.start()
            assert request(f"{server.url}/jobs/overview")[0] == 200
        finally:
            server.close()
