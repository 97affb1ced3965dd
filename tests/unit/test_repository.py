"""The repository holds code, tests and documents, never a job's output: a test job once took
``--help`` for its output directory, and its checkpoint directory, with a job's secret in its
address file, was committed as ``--help/``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What a job leaves on disk: its address file, exceptions and checkpoint history, checkpoint
# directories, shared and task-owned state files, part files in progress.
JOB_OUTPUT = re.compile(
    r"(^|/)(_jobmaster\.json|_exceptions\.json|_history\.json|_restored_from)$"
    r"|(^|/)chk-\d+/"
    r"|(^|/)(shared|taskowned)/[0-9a-f-]{16,}"
    r"|(^|/)\.part-[^/]*\.inprogress$"
)
# Checked-in snapshots that tests restore (their format must keep restoring).
GOLDEN = "tests/integration/golden/"


def job_output(paths: list[str]) -> list[str]:
    """The paths that are a job's output, or start with a dash (an option taken for a path)."""
    return [
        p
        for p in paths
        if any(part.startswith("-") for part in p.split("/"))
        or (JOB_OUTPUT.search(p) and not p.startswith(GOLDEN))
    ]


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout"
)
def test_the_repository_holds_no_job_output():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    found = job_output(files)
    assert not found, f"job output is committed (git rm -r it; .gitignore covers it): {found}"


def test_job_output_is_recognized():
    assert job_output(
        [
            "--help/checkpoints/9e51739b/_jobmaster.json",
            "out/checkpoints/9e51739b/_exceptions.json",
            "ckpt/9e51739b/chk-12/_metadata",
            "ckpt/9e51739b/shared/3f2a1b9c0d4e5f60-000001.sst",
            "out/.part-0-1042f1d6.inprogress",
            "-o/readme.txt",
        ]
    ) == [
        "--help/checkpoints/9e51739b/_jobmaster.json",
        "out/checkpoints/9e51739b/_exceptions.json",
        "ckpt/9e51739b/chk-12/_metadata",
        "ckpt/9e51739b/shared/3f2a1b9c0d4e5f60-000001.sst",
        "out/.part-0-1042f1d6.inprogress",
        "-o/readme.txt",
    ]
    ours = [
        "barrierflow/cluster/exception_history.py",
        "tests/integration/golden/connect_savepoint/_metadata",
        "docs/adr/0005-savepoints.md",
    ]
    assert job_output(ours) == []
