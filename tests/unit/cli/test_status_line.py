"""The status line of ``barrierflow run`` on a terminal: its text from a JobStatusSnapshot (a
pure function), and the rich line that shows it and is erased at the end."""

from __future__ import annotations

import dataclasses
import io

import msgspec
import pytest
from rich.console import Console

from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.cli.status_line import StatusLine, status_text
from barrierflow.cluster.job_status import JobStatusSnapshot
from barrierflow.cluster.job_status_view import JobStatusView
from tests.unit.cluster.status_view_data import SETTINGS, Clock, metrics, record, two_vertex_graph


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def view(clock) -> JobStatusView:
    v = JobStatusView("job-1", two_vertex_graph(), SETTINGS, clock)
    v.job_status_changed("RUNNING")
    v.attempt_started(1, [("v0", 0), ("v1", 0), ("v1", 1)])
    return v


def running_at(view: JobStatusView, clock: Clock, in_per_s: int, backpressured: float = 0.0):
    """One second of the source reading ``in_per_s`` records and the sinks taking them all."""
    for t in (0.0, 1000.0):
        n = int(t * in_per_s / 1000)
        view.subtask_metrics(
            [
                metrics("v0", 0, n, n, t - backpressured * t, backpressured * t, 0.0),
                metrics("v1", 0, n // 2, 0, t, 0.0, 0.0),
                metrics("v1", 1, n - n // 2, 0, t, 0.0, 0.0),
            ]
        )
    clock.now_ms += 1000


def test_a_running_job_shows_its_rates_back_pressure_and_no_checkpoint_yet(view, clock):
    clock.now_ms += 41_000
    running_at(view, clock, 1234, backpressured=0.6)
    assert status_text(view.snapshot()) == (
        "RUNNING 0:42 · in 1,234 records/s · out 1,234 records/s · no checkpoint yet"
        " · backpressure high · 0 restarts"
    )


def test_the_last_completed_checkpoint_shows_its_id_age_duration_and_size(view, clock):
    completed = msgspec.structs.replace(record(7), state_size=3 * 1024 * 1024, duration_ms=1250.0)
    view.checkpoint_recorded(completed)
    view.checkpoint_recorded(record(8, CheckpointStatus.FAILED, failure_reason="expired"))
    job = dataclasses.replace(view.snapshot(), now_ms=740 + 3_500)  # 7 ended at 740 ms
    assert "checkpoint 7 3 s ago (1.2 s, 3.0 MiB)" in status_text(job)
    job = dataclasses.replace(job, now_ms=740 + 600_000)
    assert "checkpoint 7 10 min ago" in status_text(job)


def test_large_rates_long_runs_and_restarts_stay_short(view, clock):
    view.attempt_started(2, [("v0", 0), ("v1", 0), ("v1", 1)])
    clock.now_ms += 3_723_000
    running_at(view, clock, 2_500_000)
    text = status_text(view.snapshot())
    assert text.startswith("RUNNING 1:02:04 · in 2.5M records/s · out 2.5M records/s")
    assert text.endswith("· 1 restart")


def test_a_job_without_checkpointing_says_so(view):
    job = view.snapshot()
    job = dataclasses.replace(job, settings=dataclasses.replace(job.settings, enabled=False))
    assert "checkpointing off" in status_text(job)


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=200), out


def test_the_line_shows_while_the_job_runs_and_is_erased_when_closed(view):
    console, out = terminal()
    with StatusLine(console, redirect_stdout=False) as line:
        line.show(view.snapshot)
        console.print("a log line")
        assert "records/s" in out.getvalue()
    shown = out.getvalue()
    assert shown.index("a log line") > shown.index("records/s")  # printed above the line
    assert shown.endswith("\x1b[2K")  # the last thing written erases the line


def test_the_line_goes_once_the_job_ended(view):
    console, out = terminal()
    with StatusLine(console, redirect_stdout=False) as line:
        line.show(view.snapshot)
        view.job_status_changed("FINISHED")
    shown = out.getvalue()
    assert shown.count("RUNNING") == 1  # drawn at the start; the last refresh draws nothing
    assert "FINISHED" not in shown


def test_a_failing_snapshot_keeps_the_last_line_and_does_not_raise(view):
    console, out = terminal()
    snapshots: list[JobStatusSnapshot | Exception] = [view.snapshot(), RuntimeError("gone")]

    def snapshot() -> JobStatusSnapshot:
        item = snapshots.pop(0) if snapshots else RuntimeError("gone")
        if isinstance(item, Exception):
            raise item
        return item

    with StatusLine(console, redirect_stdout=False) as line:
        line.show(snapshot)
        console.print("a log line")  # redraws the line: the snapshot raises
    assert out.getvalue().count("records/s") >= 2
