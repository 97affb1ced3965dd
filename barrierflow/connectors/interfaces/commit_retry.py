"""Retries of a failing commit, with exponential backoff; then a clear error naming the sink.
Performs no I/O (the caller passes the sleep).

A commit is idempotent (the framework repeats it after a failover), so repeating one that
failed half-way is safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("barrierflow.connectors")


class SinkCommitError(RuntimeError):
    """A commit failed after its retries; the job fails over, and recovery commits again."""


@dataclass(frozen=True)
class CommitRetryPolicy:
    max_retries: int = 3
    initial_backoff_ms: int = 100
    max_backoff_ms: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_retries", "initial_backoff_ms", "max_backoff_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"CommitRetryPolicy {name} must be an integer >= 0, got {value!r}")


def commit_with_retries(
    commit: Callable[[], None],
    policy: CommitRetryPolicy,
    where: str,
    what: str,
    sleep: Callable[[float], None],
) -> None:
    """Runs ``commit``, again after each failure, waiting longer each time; raises
    ``SinkCommitError`` naming ``where`` (the sink) and ``what`` it could not do ("commit
    checkpoint 7") once the retries ran out."""
    delay_s = policy.initial_backoff_ms / 1000
    for retry in range(policy.max_retries + 1):
        try:
            commit()
            return
        except Exception as e:
            if retry == policy.max_retries:
                raise SinkCommitError(
                    f"{where} could not {what} after {retry} retries: "
                    f"{type(e).__name__}: {e}. The job fails over; its recovery commits what "
                    "the restored checkpoint holds again (check that the external system is "
                    "reachable and accepts the commit)"
                ) from e
            log.warning(
                "%s could not %s (%s: %s); retry %d of %d in %.2f s",
                where, what, type(e).__name__, e, retry + 1, policy.max_retries, delay_s,
            )  # fmt: skip
            sleep(delay_s)
            delay_s = min(delay_s * 2, policy.max_backoff_ms / 1000)
