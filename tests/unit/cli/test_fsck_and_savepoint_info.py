"""``barrierflow checkpoints fsck`` (exit 0 healthy, 1 damaged, 2 unreadable; orphans deleted
only with --delete-orphans) and ``barrierflow savepoint info`` (a row per operator and state),
on a job directory written as a job writes it."""

from __future__ import annotations

import json
import os
import time

from typer.testing import CliRunner

from barrierflow.cli import app
from barrierflow.testing.checkpoint_directory import write_job_checkpoints


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def job(tmp_path):
    root = tmp_path / "checkpoints" / "job"
    write_job_checkpoints(str(root), checkpoints=3, keys_per_checkpoint=100)
    return root


def test_fsck_of_a_healthy_directory_exits_0_and_lists_every_checkpoint(tmp_path):
    job(tmp_path)
    result = invoke("checkpoints", "fsck", str(tmp_path / "checkpoints"), "--json")
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)
    assert report["healthy"] and report["findings"] == [] and report["orphans"] == []
    assert [(s["name"], s["damaged"]) for s in report["snapshots"]] == [
        (f"checkpoint {i}", []) for i in (1, 2, 3)
    ]


def test_fsck_exits_1_naming_the_damaged_file_and_deletes_only_old_orphans(tmp_path):
    root = job(tmp_path)
    victim = sorted(root.glob("shared/*/3-*.sst"))[0]
    victim.unlink()
    old, new = root / "shared" / "old.tmp", root / "chk-9" / "new.tmp"
    new.parent.mkdir()
    for stray in (old, new):
        stray.write_bytes(b"x")
    os.utime(old, (time.time() - 60, time.time() - 60))
    os.utime(new, (time.time() + 60, time.time() + 60))
    result = invoke("checkpoints", "fsck", str(root), "--json")
    assert result.exit_code == 1
    (report,) = json.loads(result.output)
    (finding,) = report["findings"]
    assert finding["path"] == str(victim.relative_to(root)) and finding["problem"] == "missing"
    assert finding["dependents"][0].startswith("checkpoint 3: operator 'count' subtask")
    assert [s["name"] for s in report["snapshots"] if s["damaged"]] == ["checkpoint 3"]
    assert old.exists() and new.exists()  # listed, not deleted
    deleting = invoke("checkpoints", "fsck", str(root), "--delete-orphans")
    assert deleting.exit_code == 1 and "orphan shared/old.tmp (1 B): deleted" in deleting.output
    assert "newer than the newest snapshot" in deleting.output
    assert not old.exists() and new.exists()


def test_fsck_of_a_path_that_is_not_there_exits_2(tmp_path):
    result = invoke("checkpoints", "fsck", str(tmp_path / "none"))
    assert result.exit_code == 2 and "Cannot read" in result.output


def test_savepoint_info_prints_a_row_per_operator_and_state(tmp_path):
    root = job(tmp_path)
    result = invoke("savepoint", "info", str(root / "chk-3"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (state,) = doc["states"]
    assert (doc["checkpoint_id"], doc["kind"], doc["snapshot_format"]) == (
        3,
        "checkpoint",
        "native",
    )
    assert {k: state[k] for k in ("uid", "parallelism", "max_parallelism", "state", "kind",
                                  "type", "backend", "format")} == {
        "uid": "count", "parallelism": 2, "max_parallelism": 128, "state": "count",
        "kind": "value", "type": "LONG", "backend": "rocksdb", "format": "rocksdb files",
    }  # fmt: skip
    assert state["size_bytes"] > 0
    table = invoke("savepoint", "info", str(root / "chk-3"))
    assert table.exit_code == 0 and "count" in table.output and "LONG" in table.output
    assert invoke("savepoint", "info").exit_code == 2
