"""The sink interface: a writer per subtask, and a committer per subtask or one global committer
on the JobMaster (two-phase commit). A new exactly-once sink is only a writer and a committer.

- ``SinkWriter.write(records)`` between barriers; ``prepare_commit(N)`` at the barrier makes
  what was written durable but invisible and returns *committables* (values of the sink's
  ``committable_codec``; by default dicts of plain values);
- ``Committer.commit(committables)`` makes them visible; it must be idempotent, for the
  framework repeats it after a failover; ``abort_lingering(recovery)`` cleans up what a failed
  attempt left that no checkpoint names; ``settle_at_job_end`` does it once more, on the
  JobMaster, when the job ended for good;
- or ``GlobalCommitter.commit(N, committables)``, once per checkpoint with every subtask's
  committables (one table commit per checkpoint), on the JobMaster.

The framework (``runtime/sink_operator.py``, the JobMaster's
``cluster/coordinators/global_committer_coordinator.py``) owns the rest:
committables in the checkpoint with their checkpoint id and subtask, their recovery and
re-commit, which subtask commits which after a rescale (``committables.owner_of``), retries with
backoff (``commit_retry``), and the delivery guarantee:

- EXACTLY_ONCE: committables go into checkpoint N and are committed when N completes;
- AT_LEAST_ONCE: committed at the barrier, before the snapshot is acknowledged (a writer that
  makes its records durable off the task thread says so with ``flushing``: the snapshot is
  acknowledged once that is done);
- NONE: committed as written, after each batch;
- without checkpointing, EXACTLY_ONCE and AT_LEAST_ONCE commit when the input ends.

**Threading:** writers and committers are used by their subtask's task thread only; a global
committer by the JobMaster's thread only. This module performs no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from barrierflow.connectors.interfaces.commit_retry import CommitRetryPolicy
from barrierflow.connectors.interfaces.committables import Committable, Recovery
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.connectors.interfaces.versioned_codec import PLAIN_VALUES, VersionedCodec

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "CommitRetryPolicy",
    "Committable",
    "Committer",
    "CommitterContext",
    "GlobalCommitter",
    "JobSettings",
    "Recovery",
    "Sink",
    "SinkWriter",
    "SinkWriterContext",
]

# Sends records to the driver: (collector, delivery id, pickled records), over the task's
# control channel; for sinks whose output the user reads on the driver (print()).
ToDriver = Callable[[str, str, bytes], None]


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
    checkpointing: bool = True  # False: no checkpoint will ever commit; the end of input does
    to_driver: ToDriver | None = None
    restored_state: tuple[Any, ...] = ()  # what writers' snapshot_state kept, dealt out anew


@dataclass(frozen=True)
class CommitterContext:
    job_id: str
    job_name: str
    operator_uid: str
    subtask: int
    parallelism: int
    attempt: int
    # This subtask's writer, for a committer that finishes on the writer's own connection what
    # the writer began (librdkafka commits a transaction only through its producer).
    writer: SinkWriter | None = None
    to_driver: ToDriver | None = None


class SinkWriter(ABC):
    @abstractmethod
    def write(self, records: list[Any]) -> None: ...

    @abstractmethod
    def prepare_commit(self, checkpoint_id: int) -> list[Any]:
        """At the barrier of checkpoint ``checkpoint_id`` (0: the end of input without
        checkpointing): make what was written durable but invisible; return how to commit it,
        as committables of the sink's ``committable_codec`` (they go into the checkpoint)."""

    def flushing(self, checkpoint_id: int) -> Future[None] | None:
        """Right after ``prepare_commit(checkpoint_id)``: what of the records written before
        the barrier is still on its way to the external system, as a future that is done once
        all of them arrived (it may complete on any thread), or None (``prepare_commit`` made
        them durable). The checkpoint is acknowledged only after it is done, and declined if
        it failed; so a writer flushes off the task thread without weakening its guarantee
        (KafkaSink's AT_LEAST_ONCE)."""
        return None

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        """The writer's own state, plain values (dealt out anew on a rescale, as
        ``SinkWriterContext.restored_state``)."""
        return []

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027 - an optional hook
        """What checkpoints up to ``checkpoint_id`` prepared is committed (a PostgreSQL writer
        may then write to rows its prepared transactions held)."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        """Discards what was written and not prepared (a restore replays it)."""


class Committer(ABC):
    @abstractmethod
    def commit(self, committables: list[Committable]) -> None:
        """Makes them visible. Idempotent: after a failover the framework calls it again with
        committables that may be committed already, possibly by an earlier attempt; a commit
        that raises is retried with backoff, then fails the job."""

    def abort_lingering(self, recovery: Recovery) -> None:  # noqa: B027 - an optional hook
        """Once per start of the subtask, after the restored committables it owns were
        committed: clean up what failed attempts left that no checkpoint names (prepared
        transactions to roll back, open ones to fence), for the old subtasks it answers for
        (``recovery.owns``)."""

    def settle_at_job_end(self, recovery: Recovery, last_completed: int | None) -> None:  # noqa: B027 - an optional hook
        """Once, on the JobMaster, when the job ended for good (its restart strategy gave up,
        or it refused to start) and no attempt will come to clean up: for the old subtasks it
        answers for (``recovery.owns``), commit what was prepared for checkpoints up to
        ``last_completed`` and roll back what was prepared after
        (``committables.fate_at_job_end``), so that nothing stays prepared holding locks.
        Called without a writer (``CommitterContext.writer`` is None); idempotent."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        pass


class GlobalCommitter(ABC):
    """On the JobMaster: one commit per checkpoint, with every subtask's committables (a Delta
    or Iceberg table commit). Made on the driver and on each subtask (to learn that there is
    one): making it must be cheap, with no I/O before its first commit."""

    @abstractmethod
    def commit(self, checkpoint_id: int, committables: list[Committable]) -> None:
        """Idempotent: after a failover it is called again for checkpoints that may be
        committed already (a table commit that records the checkpoint id skips those)."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        pass


class Sink(ABC):
    delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE
    commit_retry: CommitRetryPolicy = CommitRetryPolicy()

    @abstractmethod
    def create_writer(self, context: SinkWriterContext) -> SinkWriter: ...

    def create_committer(self, context: CommitterContext) -> Committer | None:
        """None: its writers prepare nothing to commit (or a global committer commits)."""
        return None

    def create_global_committer(self) -> GlobalCommitter | None:
        """A committer on the JobMaster instead of one per subtask: the JobMaster hosts it in
        the sink's operator coordinator."""
        return None

    def committable_codec(self) -> VersionedCodec[Any]:
        """How this sink's committables are kept in checkpoints and sent to its global
        committer. By default plain values: a sink whose committables are dicts of numbers,
        strings, bytes and lists needs no codec of its own."""
        return PLAIN_VALUES

    def check(self, job: JobSettings) -> None:  # noqa: B027 - an optional hook
        """On the driver, before the job is submitted: refuse bad configuration (a server
        unreachable, a transaction timeout shorter than a checkpoint may take) with a
        ``ConfigurationError``, at once rather than in a restart loop on the executors."""

    def set_input_type(self, type_info: Any) -> None:  # noqa: B027 - an optional hook
        """The declared type of the stream it is added to (``sink_to``; None: undeclared), as
        Flink's ``InputTypeConfigurable``: a sink that writes typed columns may take its
        schema from it."""

    def with_commit_retry(self, policy: CommitRetryPolicy) -> Self:
        """How often, and how patiently, a failing commit is tried again before the job
        fails."""
        if not isinstance(policy, CommitRetryPolicy):
            raise TypeError(f"with_commit_retry() takes a CommitRetryPolicy, got {policy!r}")
        self.commit_retry = policy
        return self
