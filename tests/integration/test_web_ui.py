"""The REST API, ``/metrics`` and the web UI of a job running on local Spark.

One job for the module (tests/jobs/web_ui_job.py: paced numbers, a keyed count behind a shuffle,
checkpoints every 500 ms, until canceled), so Spark starts one job for all of these tests. The
figures the REST API and the metrics give are compared with the checkpoint history the job
wrote to storage; the page is opened in a real headless browser (Debian's chromium driven by
Playwright) and what it shows is compared with the REST API. Screenshots of the page go to the
test's directory, and to docs/screenshots/ with ``BARRIERFLOW_UPDATE_SCREENSHOTS=1`` (so that a
test run leaves the repository as it was). The job is canceled through the REST API, with the
job's secret.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import HISTORY_LENGTH, CheckpointStatus
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobCanceledError
from tests.jobs import web_ui_job
from tests.unit.cluster.test_job_master_rest import request

pytestmark = pytest.mark.spark

CHROMIUM = "/usr/bin/chromium"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def wait_for(condition, timeout_s: float = 60.0, what: str = "a condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := condition():
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


class RunningJob:
    def __init__(self, client, storage: CheckpointDirectory, url: str, secret: str) -> None:
        self.client = client
        self.storage = storage
        self.url = url
        self.secret = secret
        self.job_id = client.get_job_id()

    def get(self, path: str):
        status, body = request(f"{self.url}{path}")
        assert status == 200, body
        return body

    def history(self):
        return self.storage.read_history().records

    def completed(self) -> int:
        return self.get(f"/jobs/{self.job_id}/checkpoints")["counts"]["completed"]


@pytest.fixture(scope="module")
def job(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("web-ui")
    checkpoints = f"file://{root}/checkpoints"
    env = web_ui_job.build(
        StreamExecutionEnvironment(), checkpoints, f"file://{root}/savepoints", interval_ms=500
    )
    client = env.execute_async("web ui")
    storage = CheckpointDirectory(job_root_uri(checkpoints, client.get_job_id()))
    address = wait_for(
        lambda: storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE), what="the address file"
    )
    address = json.loads(address)
    running = RunningJob(client, storage, address["rest_url"], address["secret"])
    wait_for(lambda: running.completed() >= 2, what="two completed checkpoints")
    yield running
    cancel = f"{running.url}/jobs/{running.job_id}/cancel"
    assert request(cancel, "POST")[0] == 401  # not without the secret
    assert request(cancel, "POST", running.secret)[0] == 202
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(60)


def test_rest_figures_equal_the_checkpoint_history_on_storage(job):
    (overview,) = job.get("/jobs/overview")["jobs"]
    assert overview["jid"] == job.job_id and overview["state"] == "RUNNING"
    assert overview["tasks"]["running"] == 3
    details = job.get(f"/jobs/{job.job_id}")
    assert [v["name"] for v in details["vertices"]] == [
        "numbers -> paced",
        "count per key -> discard",
    ]

    checkpoints = job.get(f"/jobs/{job.job_id}/checkpoints")
    stored = {r.checkpoint_id: r for r in job.history()}  # read after: holds all of REST's
    shown = [h for h in checkpoints["history"] if h["status"] != "IN_PROGRESS"]
    assert shown and len(stored) < HISTORY_LENGTH
    for entry in shown:
        record = stored[entry["id"]]
        assert entry["status"] == record.status.value
        assert entry["end_to_end_duration"] == round(record.duration_ms)
        assert entry["state_size"] == record.state_size
        assert entry["checkpointed_size"] == record.checkpointed_size
        assert entry["trigger_timestamp"] == record.trigger_timestamp_ms
        assert entry["num_acknowledged_subtasks"] == record.num_acknowledged
    completed = [e for e in shown if e["status"] == "COMPLETED"]
    assert checkpoints["counts"]["completed"] == len(completed)
    assert checkpoints["latest"]["completed"]["id"] == completed[0]["id"]
    durations = [e["end_to_end_duration"] for e in completed]
    assert checkpoints["summary"]["end_to_end_duration"]["max"] == max(durations)
    assert checkpoints["summary"]["end_to_end_duration"]["min"] == min(durations)

    latest = stored[completed[0]["id"]]
    subtasks = job.get(f"/jobs/{job.job_id}/checkpoints/details/{latest.checkpoint_id}/subtasks/v1")
    by_index = {s.subtask: s for s in latest.subtasks if s.vertex == "v1"}
    assert [s["index"] for s in subtasks["subtasks"]] == [0, 1]
    for s in subtasks["subtasks"]:
        stats = by_index[s["index"]]
        assert s["start_delay"] == round(stats.start_delay_ms)
        assert s["checkpoint"] == {"sync": round(stats.sync_ms), "async": round(stats.async_ms)}
        assert s["alignment"]["duration"] == round(stats.alignment_ms)
        assert s["state_size"] == stats.state_size

    config = job.get(f"/jobs/{job.job_id}/checkpoints/config")
    assert config["interval"] == 500 and config["mode"] == "exactly_once"


def _scrape(job) -> dict[tuple[str, str, str], float]:
    status, text = request(f"{job.url}/metrics")
    assert status == 200
    return {
        (s.name, s.labels.get("task_id", ""), s.labels.get("subtask_index", "")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_counters_grow_and_checkpoint_figures_match_the_history(job):
    task = "barrierflow_taskmanager_job_task_"
    first = _scrape(job)
    time.sleep(1.5)  # three heartbeats
    second = _scrape(job)
    for subtask in ("0", "1"):
        key = (task + "numRecordsIn", "v1", subtask)
        assert second[key] > first[key] > 0
        assert second[(task + "numRecordsInPerSecond", "v1", subtask)] > 0
    assert second[(task + "numRecordsOut", "v0", "0")] > first[(task + "numRecordsOut", "v0", "0")]
    # the job's own metrics (get_metrics_group()), sampled with the subtask's counters
    counted = task + "operator_counting_counted"
    for subtask in ("0", "1"):
        records_in = second[(task + "numRecordsIn", "v1", subtask)]
        assert 0 < first[(counted, "v1", subtask)] < second[(counted, "v1", subtask)]
        assert second[(counted, "v1", subtask)] <= records_in
        assert second[(task + "operator_counting_rate_rate", "v1", subtask)] > 0
    largest = [
        max(scrape[(task + "operator_counting_largest", "v1", s)] for s in ("0", "1"))
        for scrape in (first, second)
    ]
    assert 0 < largest[0] < largest[1]  # a gauge: the largest number counted so far
    for name in ("busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond"):
        assert 0 <= second[(task + name, "v1", "0")] <= 1000

    def consistent():
        """A scrape, the history, another scrape: no checkpoint completed in between."""
        before = _scrape(job)
        records = job.history()
        after = _scrape(job)
        count = ("barrierflow_jobmanager_job_numberOfCompletedCheckpoints", "", "")
        done = [r for r in records if r.status is CheckpointStatus.COMPLETED]
        return before[count] == after[count] == len(done) and (after, done[-1], len(done))

    metrics, latest, completed = wait_for(consistent, what="a scrape between two checkpoints")
    job_scope = "barrierflow_jobmanager_job_"
    assert metrics[(job_scope + "lastCheckpointDuration", "", "")] == round(latest.duration_ms)
    assert metrics[(job_scope + "lastCheckpointSize", "", "")] == latest.checkpointed_size
    assert metrics[(job_scope + "lastCheckpointFullSize", "", "")] == latest.state_size
    assert metrics[(job_scope + "lastCheckpointPersistedData", "", "")] == latest.persisted_data
    assert metrics[(job_scope + "numberOfCompletedCheckpoints", "", "")] == completed
    assert metrics[(job_scope + "numRestarts", "", "")] == 0


def test_a_savepoint_through_rest_needs_the_secret_and_lands_on_storage(job):
    savepoints = f"{job.url}/jobs/{job.job_id}/savepoints"
    assert request(savepoints, "POST", body={})[0] == 401
    assert request(savepoints, "POST", "not-the-secret", body={})[0] == 403
    status, answer = request(savepoints, "POST", job.secret, body={"formatType": "CANONICAL"})
    assert status == 202

    def done():
        body = job.get(f"/jobs/{job.job_id}/savepoints/{answer['request-id']}")
        return body["status"]["id"] == "COMPLETED" and body

    operation = wait_for(done, what="the savepoint")["operation"]
    assert "location" in operation, operation
    assert os.path.exists(operation["location"].removeprefix("file://") + "/_metadata")


def test_the_web_ui_shows_the_job_graph_and_the_checkpoint_tab(job, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    update_docs = os.environ.get("BARRIERFLOW_UPDATE_SCREENSHOTS") == "1"
    shots = DOCS_SCREENSHOTS if update_docs else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{job.url}/#overview")
            page.wait_for_selector("body[data-loaded=true]", timeout=30_000)
            names = page.eval_on_selector_all(
                "#job-graph .vertex-name", "names => names.map(n => n.textContent)"
            )
            assert names == ["numbers -> paced", "count per key -> discard"]
            assert page.locator("#job-state").inner_text() == "RUNNING"
            page.wait_for_function(
                "document.querySelector('#records-in').textContent !== '0.0'", timeout=10_000
            )
            page.screenshot(path=str(shots / "overview.png"), full_page=True)

            page.goto(f"{job.url}/#checkpoints")
            before = job.completed()
            page.wait_for_function(
                f"Number(document.querySelector('#count-completed').textContent) >= {before}",
                timeout=10_000,
            )
            shown = int(page.locator("#count-completed").inner_text())
            assert 0 < before <= shown <= job.completed()
            page.wait_for_selector("#chart-duration polyline")
            page.screenshot(path=str(shots / "checkpoint-tab.png"), full_page=True)

            page.click("#subtabs button[data-sub=history]")
            ids = page.eval_on_selector_all(
                "#history-table tbody tr", "rows => rows.map(r => Number(r.dataset.checkpoint))"
            )
            assert ids and ids == sorted(ids, reverse=True)
            rest = job.get(f"/jobs/{job.job_id}/checkpoints")["history"]
            assert set(ids) <= {h["id"] for h in rest}
            checkpoint_id = [h["id"] for h in rest if h["status"] == "COMPLETED"][1]
            page.click(f"#history-table tbody tr[data-checkpoint='{checkpoint_id}']")
            page.wait_for_selector(".subtask-details[data-vertex=v1] tbody tr")
            heading = page.locator("#checkpoint-details h3").first.inner_text()
            assert heading.startswith(f"Checkpoint #{checkpoint_id}: COMPLETED")
            sub = job.get(f"/jobs/{job.job_id}/checkpoints/details/{checkpoint_id}/subtasks/v1")
            cells = page.locator(".subtask-details[data-vertex=v1] tbody tr").nth(1)
            texts = cells.locator("td").all_inner_texts()
            assert texts[0] == "1"
            assert texts[5] == f"{sub['subtasks'][1]['start_delay']} ms"  # start delay
            assert texts[7] == f"{sub['subtasks'][1]['checkpoint']['sync']} ms"
            page.screenshot(path=str(shots / "checkpoint-history.png"), full_page=True)
        finally:
            browser.close()
