"""When restarting cannot help: a job whose attempts keep failing the same way on the same
record (a *poison* record: a restart replays it from the last checkpoint, and the function
fails on it again) stops restarting after ``restart-strategy.max-identical-failures``
consecutive attempts, whatever the restart strategy would allow, and fails naming the
operator, the exception and the record. Flink restarts such a job for ever; Kafka Streams has
exception handlers for it (KIP-1033).

Only failures on a known record count (``FailureSignature``): a broker that is down, a storage
error, a killed process fail without one, and are the restart strategy's to judge.

Performs no I/O.
"""

from __future__ import annotations

from barrierflow.control.messages import FailureSignature

DEFAULT_MAX_IDENTICAL_FAILURES = 3


class IdenticalFailures:
    def __init__(self, limit: int = DEFAULT_MAX_IDENTICAL_FAILURES) -> None:
        """``limit``: consecutive identical failures that end the job; 0 never ends it."""
        self._limit = limit
        self._last: FailureSignature | None = None
        self.count = 0

    def attempt_failed(self, signature: FailureSignature | None) -> bool:
        """An attempt failed (``signature``: on which record, if known); whether to stop
        restarting: the same failure ``limit`` times in a row."""
        if signature is None or signature != self._last:
            self._last = signature
            self.count = 0 if signature is None else 1
        else:
            self.count += 1
        return bool(self._limit) and signature is not None and self.count >= self._limit

    def explain(self) -> str:
        """Why the job stops restarting (after ``attempt_failed`` said so)."""
        s = self._last
        assert s is not None  # the failure attempt_failed counted
        return (
            f"operator {s.operator} failed the same way in {self.count} consecutive attempts, "
            f"on record {s.record}: {s.exception_type}. A restart replays that record and fails "
            f"again, so the job stops restarting (restart-strategy.max-identical-failures: "
            f"{self._limit}; 0 restarts for ever). Fix the function, or send the records it "
            "fails on to dead letters: .with_dead_letters(OutputTag(...)) on the operator"
        )
