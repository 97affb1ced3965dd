"""Retries of storage at a job's start: errors that may pass are tried again with growing
waits, then named with the path; errors that waiting cannot fix pass through at once."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.storage_retry import (
    StorageRetryPolicy,
    StorageUnavailableError,
    is_transient,
    with_storage_retries,
)
from barrierflow.errors import StorageConfigError

UNREACHABLE = OSError(
    "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 7, Could not connect"
)


class _FailsThenWorks:
    def __init__(self, failures: int, error: BaseException = UNREACHABLE) -> None:
        self.failures = failures
        self.calls = 0
        self.error = error

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "read"


def test_the_waits_double_up_to_the_cap_one_fewer_than_the_tries():
    assert StorageRetryPolicy(5, 0.5, 2.0).delays_s() == [0.5, 1.0, 2.0, 2.0]
    assert StorageRetryPolicy(1).delays_s() == []


def test_an_unreachable_server_is_retried_until_it_answers():
    action, slept = _FailsThenWorks(2), []

    assert with_storage_retries(action, "read", "s3://b/sp", StorageRetryPolicy(4), slept.append)
    assert action.calls == 3 and slept == [0.5, 1.0]


def test_storage_still_down_after_the_tries_fails_naming_the_path():
    action, slept = _FailsThenWorks(10), []

    with pytest.raises(StorageUnavailableError) as raised:
        with_storage_retries(
            action, "read the snapshot", "s3://b/sp", StorageRetryPolicy(3, 0.1), slept.append
        )
    assert action.calls == 3 and len(slept) == 2
    assert "could not read the snapshot s3://b/sp" in str(raised.value)
    assert "after 3 tries" in str(raised.value)


@pytest.mark.parametrize(
    "error",
    [
        FileNotFoundError("no such file"),
        PermissionError("denied"),
        OSError(30, "Read-only file system"),
        OSError("AWS Error ACCESS_DENIED during GetObject operation"),
        OSError("Bucket 'b' not found"),
        ValueError("not storage at all"),
    ],
)
def test_an_error_waiting_cannot_fix_passes_through_at_once(error):
    action, slept = _FailsThenWorks(1, error), []

    with pytest.raises(type(error)):
        with_storage_retries(action, "read", "s3://b/sp", StorageRetryPolicy(4), slept.append)
    assert action.calls == 1 and slept == []


def test_a_wrapped_storage_error_is_judged_by_its_cause():
    wrapped = StorageConfigError("s3://b/ckpt is not writable")
    wrapped.__cause__ = UNREACHABLE
    assert is_transient(wrapped)
    assert not is_transient(StorageConfigError("s3.access-key is set but s3.secret-key is not"))
