"""``barrierflow checkpoints show``: each operator's state, its coordinator's included."""

from __future__ import annotations

from typer.testing import CliRunner

from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    InlineHandle,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app


def test_show_names_the_size_of_each_operators_coordinator_state(tmp_path):
    storage = CheckpointDirectory(job_root_uri(str(tmp_path), "job"))
    storage.check_writable()
    source = OperatorState(
        "files", "Files", 2, 128, [OperatorSubtaskState(0, InlineHandle(b"pos"))],
        OperatorCoordinatorState(b"s" * 2048),
    )  # fmt: skip
    sink = OperatorState("out", "Out", 1, 128, [])
    storage.write_metadata(CheckpointMetadata("job", "job", 4, 1, 2, [source, sink]))
    result = CliRunner().invoke(app, ["checkpoints", "show", str(tmp_path), "4"])
    assert result.exit_code == 0, result.output
    lines = [line.strip() for line in result.output.splitlines()]
    assert "operator files (Files), parallelism 2: 3 B, coordinator state 2.0 KiB" in lines
    assert "operator out (Out), parallelism 1: 0 B" in lines
