"""The REST API without a server or a JobMaster: Flink's JSON shape built from a status view,
the guard on requests that change the job, savepoint requests and their status, ``/metrics``,
the web UI's files."""

from __future__ import annotations

import json
from concurrent.futures import Future

import pytest
from prometheus_client.parser import text_string_to_metric_families

from barrierflow.checkpoint.history import CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import SubtaskCheckpointStats
from barrierflow.cluster.job_status import TaskState
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.rest.flink_json import LONG_MAX
from barrierflow.cluster.rest.rest_api import RestApi
from barrierflow.control.messages import SubtaskMetrics
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, SnapshotFormat
from tests.unit.cluster.status_view_data import SETTINGS, Clock, metrics, record, two_vertex_graph

SECRET = "s3cret"
AUTH = {"Authorization": f"Bearer {SECRET}"}


class Control:
    """Stands in for the JobMaster."""

    def __init__(self) -> None:
        self.canceled = 0
        self.savepoints: list[tuple] = []
        self.future: Future[str] = Future()

    def cancel(self) -> None:
        self.canceled += 1

    def trigger_savepoint(self, target_dir, snapshot_format, stop, drain) -> Future[str]:
        self.savepoints.append((target_dir, snapshot_format, stop, drain))
        return self.future

    def is_secret(self, secret: str) -> bool:
        return secret == SECRET


@pytest.fixture
def view() -> JobStatusView:
    v = JobStatusView("job-1", two_vertex_graph(), SETTINGS, Clock())
    v.attempt_started(1, [("v0", 0), ("v1", 0), ("v1", 1)])
    return v


@pytest.fixture
def control() -> Control:
    return Control()


@pytest.fixture
def api(view, control) -> RestApi:
    return RestApi(view, control, open_to_read=True)


def get(api: RestApi, path: str, headers=None):
    response = api.handle("GET", path, headers or {})
    assert response.status == 200, response.body
    return json.loads(response.body)


def with_two_checkpoints(view: JobStatusView) -> None:
    """Checkpoint 1 completed (v0 and both v1 subtasks), checkpoint 2 failed, 3 in progress."""
    subtasks = [
        SubtaskCheckpointStats("v0", 0, 1.0, 2.0, 0.0, 10, start_delay_ms=3.0),
        SubtaskCheckpointStats(
            "v1", 0, 4.0, 8.0, 5.0, 100, processed_data=7, persisted_data=60, start_delay_ms=6.0
        ),
        SubtaskCheckpointStats(
            "v1", 1, 2.0, 9.0, 1.0, 200, processed_data=3, persisted_data=40, start_delay_ms=4.0
        ),
    ]
    view.checkpoint_triggered(1, 100, CHECKPOINT, 3)
    for task, at in ((("v0", 0), 110), (("v1", 0), 130), (("v1", 1), 125)):
        view.checkpoint_acknowledged(1, task, at)
    view.checkpoint_recorded(
        CheckpointRecord(
            1, CheckpointStatus.COMPLETED, 100, 130, 30.4, 310, 100, 3, 3,
            subtasks=subtasks, processed_data=10,
        )
    )  # fmt: skip
    view.checkpoint_triggered(2, 200, CHECKPOINT, 3)
    view.checkpoint_recorded(record(2, CheckpointStatus.FAILED, failure_reason="expired"))
    view.checkpoint_triggered(3, 300, CHECKPOINT, 3)


def test_jobs_overview_lists_the_job_with_flinks_task_counts(api, view):
    view.job_status_changed("RUNNING")
    view.task_state_changed(("v0", 0), TaskState.RUNNING)
    (job,) = get(api, "/jobs/overview")["jobs"]
    assert job["jid"] == "job-1" and job["state"] == "RUNNING"
    assert job["tasks"]["total"] == 3
    assert job["tasks"]["running"] == 1 and job["tasks"]["deploying"] == 2
    assert {"start-time", "end-time", "duration", "last-modification", "name"} <= job.keys()


def test_job_details_has_vertices_with_metrics_and_the_plan_with_its_edges(api, view):
    view.subtask_metrics([metrics("v1", 0, 0, 0, 0.0, 0.0, 0.0)])
    view.subtask_metrics([metrics("v1", 0, 500, 0, 200.0, 0.0, 800.0)])
    job = get(api, "/jobs/job-1")
    assert [v["id"] for v in job["vertices"]] == ["v0", "v1"]
    sink = job["vertices"][1]
    assert sink["parallelism"] == 2
    assert sink["metrics"]["read-records"] == 500
    assert sink["metrics"]["read-records-per-second"] == pytest.approx(500)
    assert sink["metrics"]["accumulated-idle-time"] == 800
    (node,) = [n for n in job["plan"]["nodes"] if n["id"] == "v1"]
    assert node["inputs"] == [
        {"num": 0, "id": "v0", "ship_strategy": "REBALANCE", "exchange": "pipelined_bounded"}
    ]


def test_job_details_say_who_leads_under_high_availability(api, view):
    assert get(api, "/jobs/job-1")["high-availability"] is None
    view.leader_elected("odd-even", 3, 1_700_000_000_000)
    assert get(api, "/jobs/job-1")["high-availability"] == {
        "cluster-id": "odd-even",
        "leader-epoch": 3,
        "leader-since": 1_700_000_000_000,
    }


def test_checkpoints_has_counts_summary_latest_and_history_newest_first(api, view):
    with_two_checkpoints(view)
    cps = get(api, "/jobs/job-1/checkpoints")
    assert cps["counts"] == {
        "restored": 0,
        "total": 3,
        "in_progress": 1,
        "completed": 1,
        "failed": 1,
    }
    assert [h["id"] for h in cps["history"]] == [3, 2, 1]
    assert [h["status"] for h in cps["history"]] == ["IN_PROGRESS", "FAILED", "COMPLETED"]
    assert cps["summary"]["end_to_end_duration"]["max"] == 30
    assert cps["summary"]["state_size"]["avg"] == 310
    assert cps["summary"]["checkpointed_size"]["min"] == 100
    latest = cps["latest"]
    assert latest["completed"]["id"] == 1 and latest["completed"]["latest_ack_timestamp"] == 130
    assert latest["failed"]["failure_message"] == "expired"
    assert latest["savepoint"] is None and latest["restored"] is None


def test_checkpoint_details_per_vertex_and_per_subtask(api, view):
    with_two_checkpoints(view)
    details = get(api, "/jobs/job-1/checkpoints/details/1")
    assert details["tasks"]["v1"]["state_size"] == 300
    assert details["tasks"]["v1"]["num_acknowledged_subtasks"] == 2
    sub = get(api, "/jobs/job-1/checkpoints/details/1/subtasks/v1")
    first, second = sub["subtasks"]
    assert first["index"] == 0 and first["end_to_end_duration"] == 30  # ack 130 - trigger 100
    assert first["start_delay"] == 6 and first["alignment"]["duration"] == 5
    assert first["checkpoint"] == {"sync": 4, "async": 8}
    assert first["alignment"]["processed"] == 7 and first["alignment"]["persisted"] == 60
    assert second["ack_timestamp"] == 125
    assert sub["summary"]["checkpoint_duration"]["async"]["max"] == 9


def test_unknown_job_checkpoint_and_path_answer_404_and_a_wrong_method_405(api, view):
    assert api.handle("GET", "/jobs/other", {}).status == 404
    assert api.handle("GET", "/jobs/job-1/checkpoints/details/99", {}).status == 404
    assert api.handle("GET", "/nothing", {}).status == 404
    response = api.handle("DELETE", "/jobs/job-1/checkpoints", {})
    assert response.status == 405 and ("Allow", "GET") in response.headers


def test_checkpoint_config_in_flinks_shape(api):
    config = get(api, "/jobs/job-1/checkpoints/config")
    assert config["mode"] == "exactly_once" and config["interval"] == 1000
    assert config["externalization"] == {"enabled": True, "delete_on_cancellation": True}
    assert config["state_backend"] == "HashMapStateBackend"


def test_periodic_checkpoints_off_show_flinks_long_max_interval(view, control):
    from dataclasses import replace

    off = JobStatusView("job-1", two_vertex_graph(), replace(SETTINGS, enabled=False), Clock())
    assert get(RestApi(off, control, True), "/jobs/job-1/checkpoints/config")["interval"] == (
        LONG_MAX
    )


def test_exceptions_newest_first(api, view):
    view.exception_occurred(1, "ValueError: first", "Traceback ... first")
    view.exception_occurred(2, "KeyError: second", "Traceback ... second")
    ex = get(api, "/jobs/job-1/exceptions")
    entries = ex["exceptionHistory"]["entries"]
    assert [e["exceptionName"] for e in entries] == ["KeyError", "ValueError"]
    assert ex["root-exception"] == "Traceback ... second"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/jobs/job-1/cancel"),
        ("PATCH", "/jobs/job-1?mode=cancel"),
        ("POST", "/jobs/job-1/savepoints"),
        ("POST", "/jobs/job-1/stop"),
    ],
)
def test_requests_that_change_the_job_need_its_secret(api, control, method, path):
    missing = api.handle(method, path, {})
    assert missing.status == 401 and "Authorization: Bearer" in missing.body.decode()
    assert api.handle(method, path, {"Authorization": "Bearer wrong"}).status == 403
    assert control.canceled == 0 and control.savepoints == []
    assert api.handle(method, path, AUTH).status == 202


def test_cancel_with_the_secret_cancels(api, control):
    assert api.handle("POST", "/jobs/job-1/cancel", AUTH).status == 202
    assert control.canceled == 1


def test_a_savepoint_request_is_answered_with_an_id_whose_status_follows_the_savepoint(
    api, control
):
    body = json.dumps({"target-directory": "/sp", "formatType": "NATIVE"}).encode()
    response = api.handle("POST", "/jobs/job-1/savepoints", AUTH, body)
    assert response.status == 202
    request_id = json.loads(response.body)["request-id"]
    assert control.savepoints == [("/sp", SnapshotFormat.NATIVE, False, False)]
    status = get(api, f"/jobs/job-1/savepoints/{request_id}")
    assert status["status"]["id"] == "IN_PROGRESS"
    control.future.set_result("/sp/savepoint-job-1-abc")
    status = get(api, f"/jobs/job-1/savepoints/{request_id}")
    assert status == {
        "status": {"id": "COMPLETED"},
        "operation": {"location": "/sp/savepoint-job-1-abc"},
    }


def test_a_bad_savepoint_body_is_refused_with_what_was_expected(api, control):
    response = api.handle("POST", "/jobs/job-1/savepoints", AUTH, b'{"formatType": "weird"}')
    assert response.status == 400 and "target-directory" in response.body.decode()
    assert control.savepoints == []


def test_reading_needs_the_secret_when_the_server_is_open_beyond_this_machine(view, control):
    api = RestApi(view, control, open_to_read=False)
    assert api.handle("GET", "/jobs/overview", {}).status == 401
    assert api.handle("GET", "/jobs/overview", AUTH).status == 200


def test_metrics_have_flinks_names_and_labels_and_the_latest_checkpoint(api, view):
    with_two_checkpoints(view)
    view.subtask_metrics([metrics("v0", 0, 0, 0, 0.0, 0.0, 0.0)])
    view.subtask_metrics([metrics("v0", 0, 100, 90, 500.0, 250.0, 250.0)])
    response = api.handle("GET", "/metrics", {})
    assert response.status == 200 and response.content_type.startswith("text/plain")
    samples = {
        s.name: s
        for family in text_string_to_metric_families(response.body.decode())
        for s in family.samples
        if s.labels.get("task_id", "v0") == "v0" and s.labels.get("subtask_index", "0") == "0"
    }
    job = "barrierflow_jobmanager_job_"
    assert samples[job + "lastCheckpointDuration"].value == 30
    assert samples[job + "lastCheckpointSize"].value == 100
    assert samples[job + "lastCheckpointFullSize"].value == 310
    assert samples[job + "numberOfCompletedCheckpoints"].value == 1
    assert samples[job + "numberOfFailedCheckpoints"].value == 1
    assert samples[job + "numberOfInProgressCheckpoints"].value == 1
    assert samples[job + "lastCheckpointRestoreTimestamp"].value == -1
    assert samples[job + "numRestarts"].value == 0
    task = "barrierflow_taskmanager_job_task_"
    records_in = samples[task + "numRecordsIn"]
    assert records_in.value == 100
    assert records_in.labels == {
        "job_id": "job-1",
        "job_name": "view",
        "task_id": "v0",
        "task_name": "numbers",
        "subtask_index": "0",
        "task_attempt_num": "1",
    }
    assert samples[task + "numRecordsOut"].value == 90
    assert samples[task + "backPressuredTimeMsPerSecond"].value == pytest.approx(250)
    assert samples[task + "busyTimeMsPerSecond"].value == pytest.approx(500)
    assert samples[task + "idleTimeMsPerSecond"].value == pytest.approx(250)
    assert samples[task + "numRecordsInPerSecond"].value == pytest.approx(100)


def test_the_debloated_buffer_size_is_a_gauge_of_each_subtask_with_an_input_gate(api, view):
    """Flink's ``debloatedBufferSize``: what the sink subtasks' gates asked for (one debloated,
    one at the configured size); the source, without a gate, has none."""
    view.subtask_metrics(
        [
            SubtaskMetrics("v0", 0, 10, 10, 1.0, 0.0, 0.0),
            SubtaskMetrics("v1", 0, 5, 0, 1.0, 0.0, 0.0, debloated_buffer_size=37),
            SubtaskMetrics("v1", 1, 5, 0, 1.0, 0.0, 0.0, debloated_buffer_size=1024),
        ]
    )
    text = api.handle("GET", "/metrics", {}).body.decode()
    (family,) = [
        f
        for f in text_string_to_metric_families(text)
        if f.name == "barrierflow_taskmanager_job_task_debloatedBufferSize"
    ]
    sizes = {(s.labels["task_id"], s.labels["subtask_index"]): s.value for s in family.samples}
    assert sizes == {("v1", "0"): 37, ("v1", "1"): 1024}


def test_two_jobs_have_registries_of_their_own(view, control):
    other = JobStatusView("job-2", two_vertex_graph(), SETTINGS, Clock())
    first = RestApi(view, control, True).handle("GET", "/metrics", {}).body.decode()
    second = RestApi(other, control, True).handle("GET", "/metrics", {}).body.decode()
    assert 'job_id="job-1"' in first and 'job_id="job-2"' not in first
    assert 'job_id="job-2"' in second and 'job_id="job-1"' not in second


def test_the_web_ui_is_served_without_external_assets(api):
    index = api.handle("GET", "/", {})
    assert index.status == 200 and index.content_type.startswith("text/html")
    page = index.body.decode()
    assert "/web/app.js" in page and "/web/style.css" in page
    for name in ("app.js", "style.css"):
        response = api.handle("GET", f"/web/{name}", {})
        assert response.status == 200
        assert b"http://" not in response.body.replace(b"http://www.w3.org/2000/svg", b"")
        assert b"https://" not in response.body
    assert "https://" not in page and "http://" not in page
    assert api.handle("GET", "/web/..%2Fserver.py", {}).status == 404
    assert api.handle("GET", "/web/missing.js", {}).status == 404


def test_backpressure_per_subtask_with_flinks_levels(api, view):
    view.subtask_metrics([metrics("v0", 0, 0, 0, 0.0, 0.0, 0.0)])
    view.subtask_metrics([metrics("v0", 0, 10, 10, 300.0, 600.0, 100.0)])
    bp = get(api, "/jobs/job-1/vertices/v0/backpressure")
    assert bp["status"] == "ok" and bp["backpressure-level"] == "high"
    (subtask,) = bp["subtasks"]
    assert subtask["ratio"] == pytest.approx(0.6)
    assert subtask["busyRatio"] == pytest.approx(0.3)
    assert subtask["idleRatio"] == pytest.approx(0.1)
    assert api.handle("GET", "/jobs/job-1/vertices/v9/backpressure", {}).status == 404
