"""The JobStatusView without a JobMaster: rates from the subtasks' cumulative counters, attempts
that start counting over, checkpoint statistics from the coordinator's hooks, and the read API
a status line uses."""

from __future__ import annotations

import threading

import pytest

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.cluster.job_status import BackpressureLevel, TaskState
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT
from tests.unit.cluster.status_view_data import SETTINGS, Clock, metrics, record, two_vertex_graph


@pytest.fixture
def view() -> JobStatusView:
    v = JobStatusView("job-1", two_vertex_graph(), SETTINGS, Clock())
    v.attempt_started(1, [("v0", 0), ("v1", 0), ("v1", 1)])
    return v


def test_rates_are_the_counters_growth_over_the_subtasks_own_running_time(view):
    view.subtask_metrics([metrics("v0", 0, 0, 0, 0.0, 0.0, 0.0)])
    view.subtask_metrics([metrics("v0", 0, 1000, 900, 300.0, 600.0, 100.0)])  # 1 s later
    source = view.snapshot().vertex("v0").subtasks[0]
    assert (source.records_in, source.records_out) == (1000, 900)
    assert source.records_in_per_s == pytest.approx(1000)
    assert source.records_out_per_s == pytest.approx(900)
    assert (source.busy_ms_per_s, source.backpressured_ms_per_s, source.idle_ms_per_s) == (
        pytest.approx(300),
        pytest.approx(600),
        pytest.approx(100),
    )
    assert view.snapshot().vertex("v0").backpressure is BackpressureLevel.HIGH


def test_rates_cover_about_the_last_two_seconds_only(view):
    # 10 s at 100 records/s, then 1 s at 1000 records/s, in heartbeats every 0.5 s
    for i in range(21):
        view.subtask_metrics([metrics("v0", 0, i * 50, 0, i * 500.0, 0.0, 0.0)])
    for i in range(1, 3):
        view.subtask_metrics([metrics("v0", 0, 1000 + i * 500, 0, 10_000 + i * 500.0, 0.0, 0.0)])
    rate = view.snapshot().vertex("v0").subtasks[0].records_in_per_s
    assert 500 < rate <= 1000  # mostly the new pace, not the ten seconds' average of 180


def test_a_new_attempt_counts_from_zero_and_counts_a_restart(view):
    view.subtask_metrics([metrics("v1", 1, 50, 0, 10.0, 0.0, 10.0)])
    view.attempt_started(2, [("v0", 0), ("v1", 0), ("v1", 1)])
    job = view.snapshot()
    assert job.num_restarts == 1 and job.attempt == 2
    assert job.vertex("v1").records_in == 0
    assert [s.state for s in job.vertex("v1").subtasks] == [TaskState.DEPLOYING] * 2


def test_metrics_of_a_subtask_not_in_the_attempt_are_ignored(view):
    view.subtask_metrics([metrics("v9", 0, 5, 5, 1.0, 0.0, 0.0)])
    assert all(v.records_in == 0 for v in view.snapshot().vertices)


def test_the_status_line_reads_records_in_at_the_sources_and_out_at_the_sinks(view):
    for t in (0.0, 1000.0):
        n = int(t)
        view.subtask_metrics(
            [
                metrics("v0", 0, 2 * n, 2 * n, t, 0.0, 0.0),
                metrics("v1", 0, n, 0, t / 2, 0.0, t / 2),
                metrics("v1", 1, n, 0, t / 2, 0.0, t / 2),
            ]
        )
    job = view.snapshot()
    assert job.records_in_per_s == pytest.approx(2000)
    assert job.records_out_per_s == pytest.approx(2000)
    assert job.backpressure is BackpressureLevel.OK


def test_checkpoints_count_pending_acknowledged_completed_and_failed(view):
    view.checkpoint_triggered(1, 100, CHECKPOINT, 3)
    view.checkpoint_acknowledged(1, ("v0", 0), 120)
    stats = view.snapshot().checkpoints
    assert stats.num_in_progress == 1 and stats.in_progress[0].num_acknowledged == 1
    view.checkpoint_recorded(record(1))
    view.checkpoint_triggered(2, 200, CHECKPOINT, 3)
    view.checkpoint_recorded(record(2, CheckpointStatus.FAILED, failure_reason="expired"))
    stats = view.snapshot().checkpoints
    assert (stats.num_completed, stats.num_failed, stats.num_in_progress) == (1, 1, 0)
    assert stats.latest_completed.checkpoint_id == 1
    assert stats.latest_failed.checkpoint_id == 2
    assert stats.ack_timestamps[1] == {("v0", 0): 120}


def test_a_terminal_job_status_ends_the_job_and_its_running_subtasks(view):
    view.task_state_changed(("v0", 0), TaskState.RUNNING)
    view.task_state_changed(("v1", 0), TaskState.FINISHED)
    view.job_status_changed("CANCELED")
    job = view.snapshot()
    assert job.end_time_ms >= job.start_time_ms
    states = {(s.vertex, s.subtask): s.state for v in job.vertices for s in v.subtasks}
    assert states[("v0", 0)] is TaskState.CANCELED
    assert states[("v1", 0)] is TaskState.FINISHED


def test_snapshots_taken_while_heartbeats_arrive_are_consistent(view):
    done = threading.Event()

    def feed() -> None:
        for i in range(2000):
            view.subtask_metrics([metrics("v0", 0, i, i, float(i), 0.0, 0.0)])
        done.set()

    thread = threading.Thread(target=feed)
    thread.start()
    while not done.is_set():
        s = view.snapshot().vertex("v0").subtasks[0]
        assert s.records_in == s.records_out
    thread.join()
