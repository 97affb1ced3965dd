"""``barrierflow exceptions JOB_ID``: the job's exception history from its checkpoint
directory, newest first, after the job ended; none recorded; an unknown job; a damaged file."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app
from barrierflow.cluster.exception_history import write_exceptions
from barrierflow.cluster.job_status import JobException

JOB = "3f2a9c"
FIRST = JobException(
    1_700_000_000_000,
    1,
    "ValueError: bad record 5000",
    'Traceback (most recent call last):\n  File "job.py", line 12, in refuse_5000\n'
    '    raise ValueError(f"bad record {value}")\nValueError: bad record 5000',
)
SECOND = JobException(1_700_000_009_000, 2, "RuntimeError: [executor lost]", "")


def invoke(*args: str):
    return CliRunner().invoke(app, ["exceptions", *args])


def job_storage(tmp_path) -> CheckpointDirectory:
    storage = CheckpointDirectory(job_root_uri(str(tmp_path), JOB))
    storage.check_writable()  # the job's directory, as a job makes it
    return storage


def test_exceptions_print_newest_first_with_the_task_traceback(tmp_path):
    write_exceptions(job_storage(tmp_path), [FIRST, SECOND])
    result = invoke(JOB, "--checkpoint-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(f"Job {JOB} recorded 2 exceptions, newest first:")
    assert out.index("attempt 2  RuntimeError: [executor lost]") < out.index(
        "attempt 1  ValueError: bad record 5000"
    )
    assert '        raise ValueError(f"bad record {value}")' in out  # indented under its line


def test_json_gives_every_field_newest_first(tmp_path):
    write_exceptions(job_storage(tmp_path), [FIRST, SECOND])
    result = invoke(JOB, "--checkpoint-dir", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["attempt"] for r in rows] == [2, 1]
    assert rows[1]["traceback"] == FIRST.traceback
    assert rows[1]["timestamp_ms"] == FIRST.timestamp_ms and rows[1]["time"]


def test_a_job_without_exceptions_says_so(tmp_path):
    job_storage(tmp_path)
    result = invoke(JOB, "--checkpoint-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"Job {JOB} recorded no exception."


def test_the_checkpoint_directory_may_come_from_the_configuration(tmp_path):
    write_exceptions(job_storage(tmp_path), [FIRST])
    result = invoke(JOB, "-D", f"execution.checkpointing.dir={tmp_path}")
    assert result.exit_code == 0, result.output
    assert "recorded 1 exception," in result.output


def test_an_unknown_job_is_an_error_naming_where_it_looked(tmp_path):
    result = invoke("nope", "--checkpoint-dir", str(tmp_path))
    assert result.exit_code == 2
    assert f"No job nope under {tmp_path}" in result.output


def test_a_damaged_history_is_an_error_naming_the_file(tmp_path):
    storage = job_storage(tmp_path)
    storage.write_small_file(layout.EXCEPTIONS_FILE, b'{"format_version": 1, "checks')
    result = invoke(JOB, "--checkpoint-dir", str(tmp_path))
    assert result.exit_code == 1
    assert storage.absolute(layout.EXCEPTIONS_FILE) in result.output.replace("\n", "")
