"""What fsck decides from the facts a scan found (checkpoint/fsck.py), and the scan itself on a
job directory written as a job writes it (incremental RocksDB checkpoints and a heap one): a
deleted shared file, a flipped byte in a state file and a stray file are each reported, the
healthy checkpoints pass, and only old orphans are deleted."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from barrierflow.checkpoint.fsck import (
    SST_MAGIC,
    FileFacts,
    Problem,
    SnapshotFacts,
    judge,
    references,
)
from barrierflow.checkpoint.fsck_scan import delete_orphans, fsck
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    FileHandle,
    IncrementalKeyedHandle,
    OperatorState,
    OperatorSubtaskState,
    SharedFileHandle,
)
from barrierflow.testing.checkpoint_directory import write_job_checkpoints

SHARED = "shared/op-1a2b-0/3-abc-000012.sst"


def incremental(
    cid: int, uploaded_by: int = 3, size: int = 10, checksum: str = "s"
) -> SnapshotFacts:
    shared = SharedFileHandle("000012.sst", FileHandle(SHARED, size, checksum), uploaded_by)
    private = {"MANIFEST": FileHandle(f"chk-{cid}/op-1a2b-0-a1.MANIFEST", 5, "m")}
    keyed = IncrementalKeyedHandle(0, 127, cid, [shared], private, {"count": "value"})
    op = OperatorState("op", "Op", 1, 128, [OperatorSubtaskState(0, None, [keyed])])
    metadata = CheckpointMetadata("job", "job", cid, 0, 1000 * cid, [op])
    return SnapshotFacts(f"checkpoint {cid}", f"chk-{cid}/_metadata", metadata)


def facts(snapshots: list[SnapshotFacts], **changes) -> dict[str, FileFacts]:
    found = {}
    for s in snapshots:
        found[s.metadata_path] = FileFacts(s.metadata_path, 100, 0)
        for ref in references(s.name, s.metadata):
            h = ref.handle
            found[h.path] = FileFacts(h.path, h.size, 0, h.checksum, True)
    for path, fact in changes.items():
        found[path.replace("__", "/")] = fact
    return found


def test_healthy_snapshots_pass_and_shared_files_are_counted_per_checkpoint():
    snapshots = [incremental(3), incremental(4)]
    report = judge("root", snapshots, facts(snapshots))
    assert report.healthy and [s.healthy for s in report.snapshots] == [True, True]
    assert report.shared_references == {SHARED: ["checkpoint 3", "checkpoint 4"]}
    assert report.orphans == []


def test_a_missing_shared_file_damages_every_checkpoint_that_names_it():
    snapshots = [incremental(3), incremental(4)]
    files = facts(snapshots)
    del files[SHARED]
    report = judge("root", snapshots, files)
    (finding,) = report.findings
    assert finding.problem is Problem.MISSING and finding.path == SHARED
    assert finding.dependents == (
        "checkpoint 3: operator 'op' subtask 0, RocksDB file 000012.sst",
        "checkpoint 4: operator 'op' subtask 0, RocksDB file 000012.sst",
    )
    assert [s.damaged for s in report.snapshots] == [(SHARED,), (SHARED,)]


@pytest.mark.parametrize(
    ("fact", "problem"),
    [
        (FileFacts(SHARED, 11, 0, "s", True), Problem.SIZE_MISMATCH),
        (FileFacts(SHARED, 10, 0, "other", True), Problem.CHECKSUM_MISMATCH),
        (FileFacts(SHARED, 10, 0, "s", False), Problem.INCOMPLETE_SST),
    ],
)
def test_a_file_of_another_size_checksum_or_without_its_footer_is_damaged(fact, problem):
    snapshots = [incremental(3)]
    report = judge("root", snapshots, {**facts(snapshots), SHARED: fact})
    assert [f.problem for f in report.findings] == [problem]
    assert not report.healthy


@pytest.mark.parametrize(
    ("later", "detail"),
    [
        (incremental(4, size=99, checksum="x"), "2 different sizes or checksums recorded"),
        (incremental(4, uploaded_by=4), "recorded as uploaded by checkpoints [3, 4]"),
    ],
)
def test_checkpoints_that_disagree_about_a_shared_file_are_reported(later, detail):
    snapshots = [incremental(3), later]
    report = judge("root", snapshots, facts(snapshots[:1]))
    disagreeing = [f for f in report.findings if f.problem is Problem.REFERENCES_DISAGREE]
    assert [f.detail for f in disagreeing] == [detail]


def test_a_file_named_before_the_checkpoint_that_uploaded_it_is_reported():
    snapshots = [incremental(2, uploaded_by=3)]
    (finding,) = judge("root", snapshots, facts(snapshots)).findings
    assert finding.detail == "named by checkpoint 2, before checkpoint 3 uploaded it"


def test_unreadable_metadata_damages_its_snapshot_only():
    broken = SnapshotFacts("checkpoint 5", "chk-5/_metadata", None, "checksum mismatch")
    snapshots = [incremental(3), broken]
    report = judge("root", snapshots, facts(snapshots[:1]))
    assert [s.healthy for s in report.snapshots] == [True, False]
    assert report.findings[0].describe() == (
        "chk-5/_metadata: metadata unreadable (checksum mismatch); needed by checkpoint 5"
    )


def test_files_nothing_references_are_orphans_deletable_only_when_older_than_the_newest():
    snapshots = [incremental(3), incremental(4)]  # the newest completed at 4000 ms
    files = facts(snapshots)
    files["shared/stale.sst"] = FileFacts("shared/stale.sst", 7, 3999)
    files["chk-5/op-a1.keyed"] = FileFacts("chk-5/op-a1.keyed", 7, 4001)  # in progress, maybe
    files["_history.json"] = FileFacts("_history.json", 7, 0)
    report = judge("root", snapshots, files)
    assert report.healthy
    assert [(o.path, o.deletable) for o in report.orphans] == [
        ("chk-5/op-a1.keyed", False),
        ("shared/stale.sst", True),
    ]
    only_chk5 = judge("root", snapshots, files, orphan_scope="chk-5")
    assert [o.path for o in only_chk5.orphans] == ["chk-5/op-a1.keyed"]


# --- the scan, on real files --------------------------------------------------------------------


def job_directory(tmp_path: Path) -> Path:
    root = tmp_path / "checkpoints" / "job"
    write_job_checkpoints(str(root), checkpoints=4, keys_per_checkpoint=200)
    return root


def test_a_job_written_as_a_job_writes_it_is_healthy_and_sst_files_end_with_the_magic(tmp_path):
    root = job_directory(tmp_path)
    (tmp_path / "checkpoints" / "notes.txt").write_text("not a job")  # beside the jobs
    (report,) = fsck(str(tmp_path / "checkpoints"))
    assert report.healthy, [f.describe() for f in report.findings]
    assert [s.name for s in report.snapshots] == [f"checkpoint {i}" for i in range(1, 5)]
    sst = next(root.glob("shared/*/*.sst")).read_bytes()
    assert int.from_bytes(sst[-8:], "little") == SST_MAGIC


def test_damage_is_reported_per_file_with_its_dependents_and_healthy_checkpoints_pass(tmp_path):
    root = job_directory(tmp_path)
    metadata = {cid: fsck(str(root / f"chk-{cid}"))[0] for cid in (1, 4)}
    assert all(r.healthy for r in metadata.values())
    deleted = sorted(root.glob("shared/*-0/4-*.sst"))[0]  # uploaded by checkpoint 4
    deleted.unlink()
    flipped = sorted(root.glob("shared/*-1/3-*.sst"))[0]  # uploaded by 3, named by 3 and 4
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    stray = root / "shared" / "stray.bin"
    stray.write_bytes(b"x")
    os.utime(stray, (time.time() - 3600, time.time() - 3600))
    (report,) = fsck(str(root), threads=4)
    problems = {f.path: f for f in report.findings}
    missing = problems[str(deleted.relative_to(root))]
    assert missing.problem is Problem.MISSING
    assert missing.dependents == ("checkpoint 4: operator 'count' subtask 0, RocksDB file "
                                  f"{deleted.name.split('-')[-1]}",)  # fmt: skip
    damaged = problems[str(flipped.relative_to(root))]
    assert damaged.problem is Problem.CHECKSUM_MISMATCH
    assert [d.split(":")[0] for d in damaged.dependents] == ["checkpoint 3", "checkpoint 4"]
    assert [s.healthy for s in report.snapshots] == [True, True, False, False]
    assert [o.path for o in report.orphans] == ["shared/stray.bin"]
    assert delete_orphans(report) == ["shared/stray.bin"] and not stray.exists()
