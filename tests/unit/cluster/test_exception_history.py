"""The job's exception history file ``_exceptions.json``: a round trip, the format version
checked, a damaged file refused naming it, and nothing written for a job without storage."""

from __future__ import annotations

import json

import pytest

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.exception_history import (
    FORMAT_VERSION,
    decode_exceptions,
    encode_exceptions,
    read_exceptions,
    write_exceptions,
)
from barrierflow.cluster.job_status import JobException
from barrierflow.errors import CorruptCheckpointError

EXCEPTIONS = (
    JobException(1_700_000_000_000, 1, "ValueError: bad record 5000", "Traceback ...\n  [x]"),
    JobException(1_700_000_005_000, 2, "OSError: disk full\nmore", ""),
)


def test_exceptions_survive_a_round_trip_in_order():
    assert decode_exceptions(encode_exceptions(EXCEPTIONS)) == EXCEPTIONS
    assert decode_exceptions(encode_exceptions(())) == ()


def test_a_file_of_another_format_version_is_refused_naming_both_versions():
    data = json.loads(encode_exceptions(EXCEPTIONS))
    data["format_version"] = FORMAT_VERSION + 1
    with pytest.raises(CorruptCheckpointError, match=r"format version 2; .* reads version 1"):
        decode_exceptions(json.dumps(data).encode(), "/ckpt/job/_exceptions.json")


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda d: d.replace(b"5000", b"5001"), "checksum mismatch"),
        (lambda d: d[: len(d) // 2], "not an exception history"),
        (lambda d: b'{"format_version": 1, "checksum": "x", "exceptions": 3}', "damaged"),
    ],
)
def test_a_damaged_file_is_refused_naming_it(damage, reason):
    data = damage(encode_exceptions(EXCEPTIONS))
    with pytest.raises(CorruptCheckpointError, match=reason) as e:
        decode_exceptions(data, "/ckpt/job/_exceptions.json")
    assert e.value.path == "/ckpt/job/_exceptions.json"


def test_write_then_read_through_checkpoint_storage(tmp_path):
    storage = CheckpointDirectory(str(tmp_path / "job"))
    assert read_exceptions(storage) is None
    write_exceptions(storage, EXCEPTIONS)
    assert (tmp_path / "job" / layout.EXCEPTIONS_FILE).is_file()
    assert read_exceptions(storage) == EXCEPTIONS


def test_a_job_without_a_checkpoint_directory_writes_nothing():
    write_exceptions(None, EXCEPTIONS)  # no storage, no error


def test_a_storage_error_is_logged_not_raised(tmp_path, caplog):
    (tmp_path / "job").write_text("a file where the job's directory should be")
    write_exceptions(CheckpointDirectory(str(tmp_path / "job")), EXCEPTIONS)
    assert "Could not write the exception history" in caplog.text
