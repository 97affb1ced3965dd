"""``barrierflow checkpoints fsck`` (exit 0 healthy, 1 damaged, 2 unreadable; orphans deleted
only with --delete-orphans) and ``barrierflow savepoint info`` (a row per operator and state),
on a job directory written as a job writes it."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

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


GOLDEN_SAVEPOINT = Path(__file__).parents[2] / "integration" / "golden" / "connect_savepoint"


def savepoints(tmp_path, count: int) -> list[Path]:
    """``count`` copies of a real savepoint in one directory, as a savepoint target holds them."""
    target = tmp_path / "savepoints"
    copies = [target / f"savepoint-{i:02d}" for i in range(count)]
    for copy in copies:
        shutil.copytree(GOLDEN_SAVEPOINT, copy)
    return copies


def test_fsck_of_a_directory_of_savepoints_checks_each_and_names_the_damaged(tmp_path):
    copies = savepoints(tmp_path, 4)
    (copies[1] / "_metadata").write_bytes(b"not a savepoint")
    flipped = bytearray((copies[2] / "_metadata").read_bytes())
    flipped[len(flipped) // 2] ^= 0xFF  # its checksum no longer matches
    (copies[2] / "_metadata").write_bytes(bytes(flipped))
    result = invoke("checkpoints", "fsck", str(tmp_path / "savepoints"), "--json")
    assert result.exit_code == 1, result.output
    reports = json.loads(result.output)
    assert [Path(r["root"]).name for r in reports] == [c.name for c in copies]
    assert [r["healthy"] for r in reports] == [True, False, False, True]
    text = invoke("checkpoints", "fsck", str(tmp_path / "savepoints")).output
    assert "savepoint-02: 1 problem\n" in text, text
    assert "problems" not in text.replace("savepoint-01: 1 problem", ""), text


def test_checkpoints_list_of_a_directory_of_savepoints_shows_a_row_each(tmp_path):
    copies = savepoints(tmp_path, 3)
    (copies[2] / "_metadata").write_bytes(b"not a savepoint")
    result = invoke("checkpoints", "list", str(tmp_path / "savepoints"), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(Path(r["path"]).name, r["kind"], r["status"], r["restorable"]) for r in rows] == [
        ("savepoint-00", "suspend", "COMPLETED", True),  # taken by a stop with savepoint
        ("savepoint-01", "suspend", "COMPLETED", True),
        ("savepoint-02", "savepoint", "UNUSABLE", False),
    ]


def test_checkpoints_list_of_a_directory_with_nothing_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("checkpoints", "list", str(tmp_path / "empty"))
    assert result.exit_code == 0 and "No checkpoints or savepoints under" in result.output


def test_tables_written_to_a_pipe_are_whole_not_cut_at_80_columns(tmp_path):
    deep = tmp_path / ("a-directory-with-a-long-name-" * 3) / "savepoints"
    shutil.copytree(GOLDEN_SAVEPOINT, deep / "savepoint-00")
    result = invoke("checkpoints", "list", str(deep))
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if "savepoint-00" in line]
    assert str(deep / "savepoint-00") in row and "COMPLETED suspend (canonical)" in row
    assert max(len(line) for line in result.output.splitlines()) > 80
