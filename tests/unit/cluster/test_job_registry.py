"""The job registry: entries written whole and read back, a stale entry (its driver gone while
it says RUNNING) told apart, ended entries kept for a while then pruned, unreadable ones
skipped; and what ``barrierflow list`` and the job commands make of it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.cluster.job_registry import (
    ENDED_KEPT_S,
    JobRegistry,
    Liveness,
    RegistryEntry,
    liveness,
)
from barrierflow.cluster.process_identity import this_process_start


def entry(job_id: str = "a1", state: str = "RUNNING", **more) -> RegistryEntry:
    now = int(time.time() * 1000)
    fields = {
        "job_id": job_id,
        "job_name": "sums",
        "state": state,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "process_start": this_process_start(),
        "started_ms": now,
        "updated_ms": now,
        "endpoint": "tcp://127.0.0.1:1",
        **more,
    }
    return RegistryEntry(**fields)


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_an_entry_is_written_whole_and_read_back(tmp_path):
    registry = JobRegistry(str(tmp_path))
    registry.record(entry("a1"))
    registry.record(entry("b2", job_root_uri="file:///ckpt/b2"))
    assert [e.job_id for e in registry.entries()] == ["a1", "b2"]
    assert registry.entry("b2").job_root_uri == "file:///ckpt/b2"
    assert registry.entry("none") is None
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_a_running_entry_whose_process_is_gone_is_stale():
    assert liveness(entry()) is Liveness.RUNNING
    assert liveness(entry(pid=dead_pid())) is Liveness.GONE
    assert liveness(entry(process_start=this_process_start() + 1)) is Liveness.GONE  # reused
    assert liveness(entry(host="elsewhere")) is Liveness.UNKNOWN
    assert liveness(entry(state="CANCELED", pid=dead_pid())) is Liveness.ENDED


def test_ended_entries_are_pruned_after_a_while_and_bad_ones_skipped(tmp_path):
    registry = JobRegistry(str(tmp_path))
    old = int(time.time() * 1000) - ENDED_KEPT_S * 1000 - 1
    registry.record(entry("old", state="FINISHED", updated_ms=old))
    registry.record(entry("new", state="FINISHED"))
    (tmp_path / "broken.json").write_text("{not json")
    assert [e.job_id for e in registry.entries()] == ["new"]
    assert not (tmp_path / "old.json").exists()


def list_output(tmp_path, *args: str) -> str:
    result = CliRunner().invoke(app, ["list", "-D", f"job-registry.dir={tmp_path}", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_list_shows_running_jobs_stale_ones_as_such_and_ended_ones_with_all(tmp_path):
    registry = JobRegistry(str(tmp_path))
    registry.record(entry("running1", rest_url="http://localhost:8081"))
    registry.record(entry("gone1", pid=dead_pid()))
    registry.record(entry("done1", state="FINISHED"))
    shown = list_output(tmp_path)
    assert "running1" in shown and "RUNNING" in shown and "http://localhost:8081" in shown
    assert "gone1" in shown and "gone (stale entry)" in shown
    assert "done1" not in shown
    assert "done1" in list_output(tmp_path, "-a")
    rows = json.loads(list_output(tmp_path, "--json"))
    assert {r["job_id"]: r["stale"] for r in rows} == {"running1": False, "gone1": True}


def test_a_command_never_reaches_a_job_through_a_stale_entry(tmp_path):
    JobRegistry(str(tmp_path)).record(entry("gone1", pid=dead_pid(), job_root_uri="/x/gone1"))
    result = CliRunner().invoke(app, ["savepoint", "gone1", "-D", f"job-registry.dir={tmp_path}"])
    assert result.exit_code == 1
    assert "is not running: its driver" in result.output and "stale" in result.output
    unknown = CliRunner().invoke(app, ["cancel", "nope", "-D", f"job-registry.dir={tmp_path}"])
    assert unknown.exit_code == 2 and "No job nope in the job registry" in unknown.output
