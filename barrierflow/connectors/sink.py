"""The sink interface: a writer and an idempotent committer (two-phase commit).

- ``write(records)`` between barriers;
- ``prepare_commit(checkpoint_id)`` at the barrier (synchronous phase): make what was written
  durable but invisible and return *committables* (small dicts of plain values) that go into the
  checkpoint;
- ``commit(committables)`` when the checkpoint is complete; it must be idempotent (a commit
  may be repeated, by ``recover`` after a failover);
- ``recover(committables, parallelism)`` once after a restore, before any write: commit these
  (those of *every* subtask of the restored checkpoint: a writer commits all of them, or the
  share it owns by a rule every subtask applies alike), discard everything else this subtask
  left uncommitted.

A sink (or source) may also have ``check(job: JobSettings)``, called on the driver before the
job is submitted, to refuse bad configuration (an unreachable server, a transaction timeout
shorter than a checkpoint may take) with a ``ConfigurationError`` at once rather than in a
restart loop on the executors.

**Threading:** the subtask's task thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class JobSettings:
    """What a connector may check its configuration against, before the job is submitted."""

    checkpointing: bool
    exactly_once: bool  # the checkpointing mode
    interval_ms: int
    timeout_ms: int
    max_concurrent: int = 1


@dataclass(frozen=True)
class SinkWriterContext:
    """Who the writer writes for: enough to name its transactions so that a later attempt, or
    a job restored from a savepoint, finds them."""

    job_id: str
    job_name: str
    operator_uid: str
    subtask: int
    parallelism: int
    attempt: int
    previous_parallelism: int | None = None  # of the restored snapshot; None: a fresh start
    checkpointing: bool = True  # False: no checkpoint will ever commit; finish() commits all
    # Sends records to the driver: (collector, delivery id, pickled records). The task's
    # control channel; for sinks whose output the user reads on the driver (print()).
    to_driver: Callable[[str, str, bytes], None] | None = None


class SinkWriter(Protocol):
    def write(self, records: list[Any]) -> None: ...
    def prepare_commit(self, checkpoint_id: int) -> list[dict]: ...
    def commit(self, committables: list[dict]) -> None: ...
    def recover(self, committables: list[dict], parallelism: int) -> None: ...
    def close(self) -> None: ...


class Sink(Protocol):
    def create_writer(self, context: SinkWriterContext) -> SinkWriter: ...
