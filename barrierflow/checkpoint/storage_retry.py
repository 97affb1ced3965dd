"""Retries of the storage a job touches while it starts (its checkpoint directory checked, the
snapshot it starts from read): an object store that is down for a few seconds must not end a
job that a restart strategy would have carried through the same outage once it runs.

A running job needs no such loop: a storage error fails the attempt or the checkpoint, and the
restart strategy and the tolerable checkpoint failures retry. Before the first attempt there
is nothing to restart, so the start retries here, a bounded number of times, then fails with
an error naming the path.

Only errors that may pass are retried (``is_transient``): a server unreachable, a connection
reset, an I/O error. A missing file, a refused permission, a missing bucket or refused
credentials fail at once: waiting does not fix them.

**Threading:** the caller's thread. **I/O:** the caller's action, and the sleeps between tries
(``sleep`` may be passed in, so that tests take no time).
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from barrierflow.checkpoint import file_systems

log = logging.getLogger("barrierflow.storage")

T = TypeVar("T")

# Errors that name the path or the account, not the moment: retrying does not change them.
_PERMANENT_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    PermissionError,
    IsADirectoryError,
    NotADirectoryError,
)
_PERMANENT_ERRNOS = frozenset({errno.EROFS, errno.ENAMETOOLONG, errno.EINVAL})
_PERMANENT_TEXTS = (
    "NO_SUCH_BUCKET",
    "not found",
    "ACCESS_DENIED",
    "Access Denied",
    "INVALID_ACCESS_KEY_ID",
    "SIGNATURE_DOES_NOT_MATCH",
)


class StorageUnavailableError(RuntimeError):
    """Storage still failed when the job's start had tried it the policy's number of times."""


@dataclass(frozen=True)
class StorageRetryPolicy:
    """How long a job's start waits for its storage: ``tries`` in all, the first wait
    ``first_delay_s``, doubling up to ``max_delay_s`` (by default 6 tries over 11.5 s: an
    object store restarted, a network blip)."""

    tries: int = 6
    first_delay_s: float = 0.5
    max_delay_s: float = 4.0

    def __post_init__(self) -> None:
        if self.tries < 1 or self.first_delay_s < 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError(
                f"StorageRetryPolicy needs tries >= 1 and 0 <= first_delay_s <= max_delay_s, "
                f"got {self}"
            )

    def delays_s(self) -> list[float]:
        """The waits between the tries, in order (one fewer than the tries)."""
        delays, delay = [], self.first_delay_s
        for _ in range(self.tries - 1):
            delays.append(delay)
            delay = min(delay * 2, self.max_delay_s)
        return delays


def is_transient(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from, is a storage error that may pass."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError):
            text = str(seen)
            return not (
                isinstance(seen, _PERMANENT_ERRORS)
                or seen.errno in _PERMANENT_ERRNOS
                or any(t in text for t in _PERMANENT_TEXTS)
            )
        seen = seen.__cause__
    return False


def with_storage_retries(
    action: Callable[[], T],
    what: str,
    uri: str,
    policy: StorageRetryPolicy = StorageRetryPolicy(),
    sleep: Callable[[float], None] | None = None,
) -> T:
    """``action()``, tried again after each transient storage error (logged with ``what`` it
    does and the ``uri`` it touches) until it succeeds or the policy's tries are spent; then
    ``StorageUnavailableError`` naming both. Any other error passes through at once."""
    pause = sleep or time.sleep  # looked up now, so that a test can replace it
    delays = policy.delays_s()
    tried = 0
    while True:
        tried += 1
        try:
            return action()
        except Exception as e:
            if not is_transient(e):
                raise
            if tried == policy.tries:
                raise StorageUnavailableError(
                    f"could not {what} {uri}: storage still failing after {tried} tries over "
                    f"{sum(delays):.1f} s ({type(e).__name__}: {e}); "
                    f"{file_systems.explain(uri, e)}; then start the job again"
                ) from e
            delay_s = delays[tried - 1]
            log.warning(
                "Could not %s %s (%s: %s); the storage may be restarting: try %d of %d in %.1f s",
                what, uri, type(e).__name__, e, tried + 1, policy.tries, delay_s,
            )  # fmt: skip
            pause(delay_s)
