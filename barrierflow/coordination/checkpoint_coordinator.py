"""CheckpointCoordinator: triggers checkpoints, collects acknowledgements, completes them.

A thin shell: the decisions are the pure parts' (``CheckpointRequestDecider``: what to trigger
and when; ``PendingCheckpoints``: what expired, what a completion subsumes;
``CheckpointFailureManager``: when failures fail the job; ``CompletedCheckpointStore``: what is
retained; ``SharedStateRegistry``: which shared files may go, asked through
``checkpoint_completion.py`` when a checkpoint completes). The shell carries them out: it
reaches tasks through a ``TaskGateway``, reads time from a ``Clock``, and has storage written
and deleted on a ``StorageIo`` (``CompletionMarker``: the ``_metadata`` of a completion;
``StorageHousekeeping``: every deletion; ``CheckpointHistoryRecorder``: the history).

Triggering N takes the state of every operator coordinator (split enumerators, global
committers) in the same step as the triggers are sent; it goes into N's metadata, and the
operator coordinators hear of N's completion or abort when the tasks do
(``operator_coordinator_checkpoints.py``). Completing N is an ordered protocol (``_complete``).
Aborting N deletes its directory and the shared files its acknowledgements listed, and tells
every task. When an attempt has ended (every one of its tasks stopped), files no retained
checkpoint references are swept: uploads of tasks that died or were stopped before
acknowledging.

A savepoint (``trigger_savepoint``) shares the checkpoint ids, the triggers and the
acknowledgements, and goes its own way from there (``SavepointCompletion``). A job restored
with ``claim-mode: CLAIM`` owns the snapshot it started from and deletes it once its own
checkpoints would have subsumed it.

**Threading:** the JobMaster's thread only. **I/O:** writes and deletes on the ``StorageIo``;
what a take-over and a restore read, and a savepoint's new directory, on this thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from barrierflow.checkpoint.history import CheckpointHistory, CheckpointStatus
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_completion import (
    build_metadata,
    retain,
    stale_references,
    uploaded_by,
)
from barrierflow.coordination.checkpoint_failure_manager import (
    CheckpointFailureManager,
    CheckpointFailureReason,
)
from barrierflow.coordination.checkpoint_history_recorder import CheckpointHistoryRecorder
from barrierflow.coordination.checkpoint_request_decider import (
    CheckpointRequest,
    CheckpointRequestDecider,
    TriggerConfig,
    TriggerNow,
    WaitUntil,
)
from barrierflow.coordination.checkpoint_stats_listener import CheckpointStatsListener
from barrierflow.coordination.checkpoint_take_over import first_unused_id, read_retained
from barrierflow.coordination.checkpoints_asked_for import CheckpointsAskedFor, OnDone
from barrierflow.coordination.clock import Clock, SystemClock
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.completion_marker import CompletionMarker
from barrierflow.coordination.coordinator_storage import CoordinatorStorage, SavepointStorage
from barrierflow.coordination.leadership import (
    NOT_HIGHLY_AVAILABLE,
    CheckpointIds,
    Leadership,
    refuse_a_later_epoch,
)
from barrierflow.coordination.operator_coordinator_checkpoints import (
    NoOperatorCoordinators,
    OperatorCoordinatorCheckpoints,
)
from barrierflow.coordination.pending_checkpoint import (
    AckResult,
    PendingCheckpoint,
    PendingCheckpoints,
    TaskAcknowledgement,
    TaskKey,
)
from barrierflow.coordination.restorable_checkpoints import RestorableCheckpoints
from barrierflow.coordination.savepoint_completion import SavepointCompletion, SavepointResult
from barrierflow.coordination.shared_state_registry import SharedStateRegistry
from barrierflow.coordination.storage_housekeeping import ClaimedSnapshot, StorageHousekeeping
from barrierflow.coordination.storage_io import InlineStorageIo, StorageIo
from barrierflow.graph.job_graph import JobGraph
from barrierflow.human_units import human_bytes
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    CheckpointBarrier,
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)

log = logging.getLogger("barrierflow.checkpoint")

SLOW_REPORT_EVERY_S = 30.0
IDLE_TICK_S = 0.1  # how soon to look again when nothing is due before some event


class CheckpointFailuresExceeded(Exception):
    """More consecutive checkpoint failures than ``tolerable-failed-checkpoints``."""


class TaskGateway(Protocol):
    """How the coordinator reaches the tasks of the running attempt (the JobMaster's control
    channel: it stamps each message with the attempt). Sending never blocks and never fails:
    a task that is gone is noticed by the JobMaster, not here."""

    def trigger_checkpoint(self, task: TaskKey, barrier: CheckpointBarrier) -> None: ...

    def notify_checkpoint_complete(self, task: TaskKey, checkpoint_id: int) -> None: ...

    def notify_checkpoint_aborted(
        self, task: TaskKey, checkpoint_id: int, references_released: bool
    ) -> None: ...


@dataclass(frozen=True)
class CoordinatorConfig:
    interval_s: float | None  # None: checkpointing is off (savepoints only)
    timeout_s: float
    min_pause_s: float
    max_concurrent: int
    tolerable_failures: int
    num_retained: int
    checkpoints_after_tasks_finish: bool = True
    checkpoint_options: CheckpointOptions = CHECKPOINT  # of periodic checkpoints


class CheckpointCoordinator:
    def __init__(
        self,
        job_id: str,
        job_graph: JobGraph,
        storage: CoordinatorStorage,
        config: CoordinatorConfig,
        gateway: TaskGateway,
        savepoint_storage: SavepointStorage,
        first_checkpoint_id: int = 1,
        clock: Clock | None = None,
        claimed: ClaimedSnapshot | None = None,
        stats_listener: CheckpointStatsListener | None = None,
        storage_io: StorageIo | None = None,
        operator_coordinators: OperatorCoordinatorCheckpoints | None = None,
        leadership: Leadership = NOT_HIGHLY_AVAILABLE,
    ) -> None:
        """``stats_listener``: told of every checkpoint's progress (the REST API's statistics).
        ``storage_io``: where writes and deletes run (default: at once, on this thread).
        ``operator_coordinators``: the job's, snapshotted with every trigger (default: none).
        ``leadership``: asked before tasks are told a checkpoint completed, and for checkpoint
        ids (high availability; ``storage_io`` should be fenced by it too)."""
        self._job_id = job_id
        self._graph = job_graph
        self._storage = storage
        self._config = config
        self._gateway = gateway
        self._operator_coordinators = operator_coordinators or NoOperatorCoordinators()
        self._stats = stats_listener
        self._clock = clock or SystemClock()
        io = storage_io or InlineStorageIo()
        self._decider = CheckpointRequestDecider(
            TriggerConfig(
                config.interval_s,
                config.min_pause_s,
                config.max_concurrent,
                config.checkpoints_after_tasks_finish,
                config.checkpoint_options,
            )
        )
        self._pending = PendingCheckpoints(config.timeout_s, SLOW_REPORT_EVERY_S)
        self._failures = CheckpointFailureManager(config.tolerable_failures)
        self.store = CompletedCheckpointStore(config.num_retained)
        self.registry = SharedStateRegistry()
        self.restorable = RestorableCheckpoints(self.store, storage)
        self._housekeeping = StorageHousekeeping(
            storage, savepoint_storage, io, claimed, config.num_retained
        )
        self._leadership = leadership
        self._history = CheckpointHistoryRecorder(
            CheckpointHistory(job_id, job_graph.job_name),
            storage,
            io,
            self._clock,
            stats_listener,
            leadership.epoch,
        )
        self._marker = CompletionMarker(
            self._pending,
            io,
            self._clock,
            lambda cid, detail: self._abort(cid, CheckpointFailureReason.FINALIZE_FAILED, detail),
        )
        self._savepoints = SavepointCompletion(
            savepoint_storage,
            self._decider,
            self._marker,
            self._housekeeping,
            self._history,
            self._notify_complete,
        )
        self._ids = CheckpointIds(first_checkpoint_id, leadership)
        self._tasks: frozenset[TaskKey] = frozenset()
        self._sources: list[TaskKey] = []
        self._aborted: set[int] = set()  # this attempt's: their late acks' uploads are deleted
        self._asked_for = CheckpointsAskedFor()  # by ``checkpoint_now``
        self.num_completed = 0

    @property
    def num_failed(self) -> int:
        return self._failures.num_failed

    @property
    def history(self) -> CheckpointHistory:
        return self._history.history

    def take_over(self) -> bool:
        """Adopts the retained checkpoints a previous coordinator of this job left: the newest
        ``num-retained`` readable ones go into the store, the shared state registry is rebuilt
        from their metadata, checkpoint ids continue after every id already used, and what
        they do not reference is deleted. False when there was no readable checkpoint (ids
        continue after the ones used all the same)."""
        retained = read_retained(self._storage, self._config.num_retained)
        for metadata in retained:
            refuse_a_later_epoch(metadata, self._leadership.epoch)
            self.store.add(metadata)
        self.registry = SharedStateRegistry.rebuild(
            (m.checkpoint_id, m.shared_paths()) for m in retained
        )
        self._history.take_over()
        self._ids.continue_after(first_unused_id(self._storage, self.history, self._ids.next) - 1)
        if not retained:
            return False
        log.info(
            "Took over %d retained checkpoint(s) of job %s: %s",
            len(retained),
            self._job_id,
            ", ".join(str(m.checkpoint_id) for m in retained),
        )
        self._sweep_orphans()
        return True

    # --- attempts -------------------------------------------------------------------------------

    def graph_changed(self, job_graph: JobGraph) -> None:
        """The job was rescaled: its checkpoints hold the operators of ``job_graph`` at their
        new parallelism from the next attempt on."""
        self._graph = job_graph

    def start_attempt(self, tasks: frozenset[TaskKey], sources: list[TaskKey]) -> None:
        self.abort_all("the job restarted")
        self._savepoints.attempt_started()
        self._aborted.clear()
        self._tasks = tasks
        self._sources = sources
        self._decider.attempt_started()

    def all_tasks_running(self) -> None:
        self._decider.all_tasks_running(self._clock.monotonic_s())

    def source_ended(self) -> None:
        """One source subtask read all of its input."""
        self._decider.source_ended()

    def sources_finished(self) -> None:
        """Every source read all of its input: a final checkpoint is due now."""
        self._decider.sources_finished()

    def checkpoint_now(self, on_done: OnDone) -> None:
        """A checkpoint at once (FLIP-461's "trigger actively": a rescale takes one first, to
        replay little), or the one already pending: ``on_done(checkpoint_id, None)`` on this
        thread once a checkpoint completed after this call, ``on_done(None, why)`` if one
        triggered for it failed first, or the attempt ended."""
        self._asked_for.add(on_done, self._ids.next)
        self._decider.request_checkpoint_now()

    def trigger_savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        kind: CheckpointKind,
        on_done: Callable[[SavepointResult], None],
    ) -> None:
        """Asks for a savepoint (``kind`` SAVEPOINT, or SUSPEND / TERMINATE to stop the job)
        into a new directory under ``target_dir``. ``on_done`` is called once, on this thread:
        at once if the directory cannot be made, else when the savepoint completed or failed."""
        self._savepoints.request(self._job_id, target_dir, snapshot_format, kind, on_done)

    def shutdown(self, reason: str) -> None:
        """The job ended: what is pending is aborted and every request still queued fails."""
        self.abort_all(reason)
        self._savepoints.shutdown(reason)

    # --- triggering -----------------------------------------------------------------------------

    def tick(self) -> float:
        """Aborts what timed out and triggers what is due; returns when to tick next."""
        now = self._clock.monotonic_s()
        for cid in self._pending.expired(now):
            self._abort(
                cid,
                CheckpointFailureReason.EXPIRED,
                f"timed out after {self._config.timeout_s:g} s",
            )
        for pending in self._pending.due_for_report(now):
            waiting = sorted(pending.not_yet_acknowledged)
            log.warning(
                "Checkpoint %d has been running for %.0f s; waiting for %d of %d tasks: %s",
                pending.checkpoint_id,
                self._pending.elapsed_s(pending.checkpoint_id, now),
                len(waiting),
                len(self._tasks),
                ", ".join(f"{v}[{i}]" for v, i in waiting[:10]),
            )
        decision = self._decider.decide(now, len(self._pending))
        if isinstance(decision, TriggerNow):
            self._trigger(decision.request, now)
            return now + min(self._config.interval_s or IDLE_TICK_S, 0.5)
        if isinstance(decision, WaitUntil):
            return decision.deadline_s
        return now + IDLE_TICK_S

    def _trigger(self, request: CheckpointRequest, now: float) -> None:
        """Snapshots the operator coordinators, then sends the triggers, in one step on this
        thread: what a coordinator sent a source before its snapshot reaches that source
        before the trigger (docs/adr/0013-operator-coordinators.md). A coordinator that raises
        (``OperatorCoordinatorFailed``, raised on) leaves nothing pending or triggered."""
        cid = self._ids.take()  # even when a coordinator fails: no coordinator sees an id twice
        coordinator_states = self._operator_coordinators.snapshot(cid)
        barrier = CheckpointBarrier(cid, self._clock.wall_ms(), request.options)
        pending = PendingCheckpoint(
            cid,
            barrier.timestamp_ms,
            self._tasks,
            request.options,
            coordinator_states=coordinator_states,
        )
        self._pending.add(pending, now)
        if request.options.is_savepoint:
            self._savepoints.triggered(request, cid)
        else:
            self.registry.checkpoint_triggered(cid)
        self._decider.triggered(request, now)
        if self._stats is not None:
            self._stats.checkpoint_triggered(
                cid, barrier.timestamp_ms, request.options, len(self._tasks)
            )
        for source in self._sources:
            self._gateway.trigger_checkpoint(source, barrier)

    # --- acknowledgements -----------------------------------------------------------------------

    def on_acknowledge(self, ack: msg.AcknowledgeCheckpoint) -> None:
        pending = self._pending.get(ack.checkpoint_id)
        if pending is None:
            if ack.checkpoint_id in self._aborted:  # its uploads can never be referenced
                new = uploaded_by(ack.checkpoint_id, ack.operator_states.values())
                unregistered = self.registry.unregister_aborted(ack.checkpoint_id, new)
                self._housekeeping.delete_shared(unregistered)
            return
        # A duplicate or an unknown task's ack is not recorded; a pending checkpoint that is
        # fully acknowledged completes (or aborts) at once, so no ack finds it again.
        task = (ack.vertex, ack.subtask)
        result = pending.acknowledge(TaskAcknowledgement(task, ack.operator_states, ack.stats))
        if result is AckResult.SUCCESS and self._stats is not None:
            self._stats.checkpoint_acknowledged(ack.checkpoint_id, task, self._clock.wall_ms())
        if pending.is_fully_acknowledged:
            self._complete(pending)

    def on_decline(self, decline: msg.DeclineCheckpoint) -> None:
        if self._pending.get(decline.checkpoint_id) is not None:
            subsumed = decline.reason is msg.DeclineReason.SUBSUMED
            detail = decline.detail or decline.reason.value
            self._abort(
                decline.checkpoint_id,
                CheckpointFailureReason.SUBSUMED if subsumed else CheckpointFailureReason.DECLINED,
                f"declined by {decline.vertex}[{decline.subtask}]: {detail}",
            )

    # --- completing -----------------------------------------------------------------------------

    def _complete(self, pending: PendingCheckpoint) -> None:
        """Completes checkpoint N, which every task acknowledged (a savepoint goes its own way:
        ``SavepointCompletion.complete``). In order:

          1. validate: abort N instead if it reuses a shared file that may already be deleted;
          2. write ``chk-N/_metadata`` on the storage I/O thread, last and atomically: from then
             on N is restorable; steps 3-6 follow once it is written (``_completed``);
          3. register N's shared files;
          4. add N to the completed store; delete the checkpoints it subsumed, the shared files
             no retained checkpoint references any more, and a claimed snapshot it subsumed;
          5. abort the older pending checkpoints, which can no longer complete usefully;
          6. notify every task and operator coordinator: 2PC sinks commit now.

        What steps 1, 3 and 4 ask of the registry and the store: ``checkpoint_completion.py``."""
        metadata = build_metadata(
            self._job_id, self._graph, pending, self._clock.wall_ms(), self._leadership.epoch
        )
        if pending.options.is_savepoint:
            self._savepoints.complete(pending, metadata)
            return
        cid = pending.checkpoint_id
        # 1. validate the shared files N reuses
        missing = stale_references(self.registry, metadata)
        if missing:
            self._abort(
                cid,
                CheckpointFailureReason.STALE_REFERENCE,
                f"it references {len(missing)} shared file(s) of a checkpoint no longer "
                f"retained, e.g. {sorted(missing)[0]}",
                references_released=True,
            )
            return
        # 2. write chk-N/_metadata on the storage I/O thread
        self._marker.write(
            pending,
            lambda: self._storage.write_metadata(metadata),
            lambda now, duration_ms: self._completed(pending, metadata, now, duration_ms),
            discard=lambda: self._housekeeping.discard_checkpoint(cid),
        )

    def _completed(
        self,
        pending: PendingCheckpoint,
        metadata: CheckpointMetadata,
        now: float,
        duration_ms: float,
    ) -> None:
        """Steps 3-6 of ``_complete``, once N's ``_metadata`` is on storage."""
        cid = pending.checkpoint_id
        # 3. register N's shared files; 4. retain N, deleting what it subsumed
        self._housekeeping.let_go(retain(self.registry, self.store, metadata))
        self._decider.completed(pending.options, now)
        self._failures.completed()
        self.num_completed += 1
        # 5. abort the older pending checkpoints
        for older in self._pending.subsumed_by(cid):
            self._abort(older, CheckpointFailureReason.SUBSUMED, f"subsumed by checkpoint {cid}")
        record = self._history.record(pending, CheckpointStatus.COMPLETED, duration_ms)
        log.info(
            "Completed checkpoint %d in %.0f ms%s: %s (%s written), %d tasks",
            cid,
            record.duration_ms,
            f", unaligned, {human_bytes(record.persisted_data)} in flight persisted"
            if record.unaligned
            else "",
            human_bytes(record.state_size),
            human_bytes(record.checkpointed_size),
            record.num_tasks,
        )
        # 6. notify: sinks commit, incremental backends may reuse this checkpoint's files
        self._notify_complete(cid)
        self._asked_for.completed(cid)

    def _notify_complete(self, checkpoint_id: int) -> None:
        """Sinks commit when they hear this: only a leader may say it."""
        self._leadership.check(f"tell the tasks that checkpoint {checkpoint_id} completed")
        for task in self._tasks:
            self._gateway.notify_checkpoint_complete(task, checkpoint_id)
        self._operator_coordinators.checkpoint_complete(checkpoint_id)

    # --- aborting -------------------------------------------------------------------------------

    def attempt_ended(self, reason: str) -> None:
        """Every task of the attempt has stopped: aborts what is pending, then sweeps."""
        self.abort_all(reason)
        self._asked_for.attempt_ended(reason)
        self._sweep_orphans()

    def abort_all(self, reason: str) -> None:
        for cid in self._pending.ids():
            self._abort(cid, CheckpointFailureReason.ATTEMPT_ENDED, reason)

    def _abort(
        self,
        cid: int,
        reason: CheckpointFailureReason,
        detail: str,
        references_released: bool = False,
    ) -> None:
        now = self._clock.monotonic_s()
        if self._pending.get(cid) is None:
            return
        elapsed_ms = self._pending.elapsed_s(cid, now) * 1000
        pending = self._pending.remove(cid)
        assert pending is not None  # it was pending just above
        pending.discarded = True
        options = pending.options
        if options.is_savepoint:
            self._housekeeping.discard_savepoint(options.target_location)
        else:
            self._aborted.add(cid)
            uploaded = uploaded_by(cid, pending.acknowledged_states())
            self._housekeeping.delete_shared(self.registry.unregister_aborted(cid, uploaded))
            self._housekeeping.discard_checkpoint(cid)
        self._decider.aborted(options)
        if not options.is_savepoint:
            self._asked_for.failed(cid, detail)
        self._history.record(pending, CheckpointStatus.FAILED, elapsed_ms, detail)
        for task in self._tasks:
            self._gateway.notify_checkpoint_aborted(task, cid, references_released)
        self._operator_coordinators.checkpoint_aborted(cid)
        what = "Savepoint" if options.is_savepoint else "Checkpoint"
        log.warning("%s %d aborted: %s", what, cid, detail)
        if options.is_savepoint:
            self._savepoints.failed(cid, detail)
        fail = self._failures.failed(cid, options, reason, detail)
        if fail is not None:
            raise CheckpointFailuresExceeded(fail.reason)

    def _sweep_orphans(self) -> None:
        retained = {c.checkpoint_id for c in self.store.all()}
        self._housekeeping.sweep_orphans(retained, self.registry.known_keys())
