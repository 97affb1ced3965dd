"""Operator coordinators: the part of an operator that runs once per job, on the JobMaster.

A source's split enumerator (which subtask reads which split, and which splits exist) and a
sink's global committer (one commit for the whole checkpoint) cannot run in a subtask: they
see every subtask. An operator whose function (an operator spec's ``function``) needs one gets
one ``OperatorCoordinator`` per operator uid, hosted by the JobMaster
(``cluster/operator_coordinator_host.py``): the host decides what a source or a sink with a
global committer gets (``cluster/coordinators/creation.py``); any other function that
implements ``CoordinatorProvider`` makes its own. It talks with the operator's subtasks
through opaque events (bytes both ways: the connector chooses their encoding), and its state is
part of every checkpoint and savepoint (a section per operator uid of ``_metadata``).

**Threading:** every method of a coordinator, and every callback it registers, runs on the
JobMaster's thread, one at a time, never concurrently with another call of the same job's
coordinators; a coordinator needs no locks. Of its context, only ``call_soon`` may be called
from another thread (a coordinator's own worker hands its results back with it).

**Lifecycle** of a coordinator, as the host drives it::

    create_coordinator(context)
    restore_state(checkpoint_id | None, state | None)   before each attempt's tasks start
    start()                                             once, after the first restore
    subtask_ready(i)                                    as each subtask of the attempt runs
    handle_event(i, payload), snapshot_state(N),        while the attempt runs
    notify_checkpoint_complete(N) / _aborted(N)
    restore_state(...)                                  again on a failover, then subtask_ready
    close()                                             once, when the job ended

Performs no I/O.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable


class OperatorCoordinatorContext(ABC):
    """What the JobMaster gives a coordinator: who it is, and how it reaches its subtasks.

    **Threading:** the JobMaster's thread, except ``call_soon``, which any thread may call."""

    @property
    @abstractmethod
    def operator_uid(self) -> str:
        """The uid of the operator the coordinator belongs to (its state is kept under it)."""

    @property
    @abstractmethod
    def operator_name(self) -> str: ...

    @property
    @abstractmethod
    def parallelism(self) -> int:
        """The number of the operator's subtasks, ``0 .. parallelism - 1``, in this job."""

    @abstractmethod
    def send_event(self, subtask: int, payload: bytes) -> None:
        """Sends ``payload`` to that subtask of the running attempt, in order with every other
        event and checkpoint trigger the JobMaster sends it. An event for a subtask that does
        not run yet is held and sent right before its ``subtask_ready``; events held when an
        attempt ends are dropped (the next ``restore_state`` resets what the coordinator
        believes it sent). Never blocks."""

    @abstractmethod
    def call_periodically(self, interval_s: float, fn: Callable[[], None]) -> None:
        """Calls ``fn`` every ``interval_s`` seconds on the JobMaster's thread, while an
        attempt runs (not between a failure and the next attempt), until the job ends."""

    @abstractmethod
    def call_soon(self, fn: Callable[[], None]) -> None:
        """Calls ``fn`` on the JobMaster's thread soon. From any thread."""

    @abstractmethod
    def fail_job(self, error: BaseException | str) -> None:
        """Fails the running attempt, as a failed task would: the restart strategy decides
        whether the job restarts (from the latest checkpoint) or fails. The error names the
        operator."""


class OperatorCoordinator(ABC):
    """The JobMaster's half of an operator. An exception from any method fails the running
    attempt with an error naming the operator (the restart strategy decides what follows);
    ``fail_job`` does the same on purpose."""

    @abstractmethod
    def start(self) -> None:
        """Once, after the first ``restore_state``: start discovering, open connections."""

    @abstractmethod
    def handle_event(self, subtask: int, payload: bytes) -> None:
        """An event that subtask of the running attempt sent (events of attempts that ended
        never reach here)."""

    @abstractmethod
    def snapshot_state(self, checkpoint_id: int) -> bytes:
        """The coordinator's state for checkpoint ``checkpoint_id``, as bytes it reads back
        in ``restore_state``.

        Taken in the same step in which the JobMaster sends the checkpoint's triggers to the
        source subtasks, after everything the coordinator sent before: an event sent before
        this call reaches a source subtask before its trigger (so the subtask's own snapshot
        reflects it); an event sent after it reaches the subtask after its snapshot, and so
        must be covered by this state (e.g. a split assigned after the snapshot is still
        unassigned in it, and is assigned again after a restore). Events to subtasks that are
        not sources travel apart from the barriers that reach them through the data channels:
        their order with the checkpoint is not known. The state must stand on its own (it is
        kept in savepoints, restored by another job, at another parallelism)."""

    @abstractmethod
    def restore_state(self, checkpoint_id: int | None, state: bytes | None) -> None:
        """Before an attempt's tasks start: resets the coordinator to the state it snapshotted
        for ``checkpoint_id``. ``state`` None: nothing to restore (a fresh start when
        ``checkpoint_id`` is None too, else a snapshot without state for this operator).

        Idempotent, and a full reset: it is called again before every attempt, with a
        coordinator that went on after that checkpoint (events it sent and received since
        are forgotten on both sides; subtasks report ready again)."""

    def restore_from_earlier_version(self, checkpoint_id: int) -> None:
        """The checkpoint restored holds this operator's subtask state but no coordinator
        state: an earlier barrierflow took it, before the operator had a coordinator. By
        default this is restoring nothing; a coordinator whose subtasks' state cannot be read
        without its own (a source's readers) decides here what carries over, or refuses."""
        self.restore_state(checkpoint_id, None)

    @abstractmethod
    def subtask_ready(self, subtask: int) -> None:
        """That subtask of the current attempt runs (restored its state): send it what it
        needs (its splits, say)."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:  # noqa: B027 - optional
        """Checkpoint ``checkpoint_id`` completed (when the tasks are told, so also for a
        savepoint that stops the job). A global committer commits here; it may be called
        again for the same committables after a failover, so a commit must be idempotent."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:  # noqa: B027 - optional
        """Checkpoint ``checkpoint_id`` will never complete."""

    def close(self) -> None:  # noqa: B027 - optional
        """Once, when the job ended (finished, failed or canceled)."""


class CoordinatorProvider(ABC):
    """Implemented by an operator's function that makes its own coordinator on the JobMaster
    (rather than the one the host makes for a source or a sink)."""

    @abstractmethod
    def create_coordinator(self, context: OperatorCoordinatorContext) -> OperatorCoordinator | None:
        """The coordinator of this operator in this job, or None when it needs none (e.g. a
        sink whose guarantee needs no global commit). Called once per job, on the JobMaster."""
