"""CheckpointCoordinator: triggers checkpoints, collects acknowledgements, completes them.

A thin shell: the decisions are the pure parts' (``CheckpointRequestDecider``: what to trigger
and when; ``PendingCheckpoints``: what expired, what a completion subsumes;
``CheckpointFailureManager``: when failures fail the job; ``CompletedCheckpointStore``: what is
retained; ``SharedStateRegistry``: which shared files may go). The shell carries them out: it
reaches tasks through a ``TaskGateway``, storage through a ``CoordinatorStorage``, and reads
time from a ``Clock``.

Completing checkpoint N, in order:
  1. build the metadata from every task's acknowledgement; abort N instead if it references a
     shared file that may already be deleted (``SharedStateRegistry.validate_references``);
  2. write ``chk-N/_metadata``, last and atomically: from now on N is restorable;
  3. register N's shared files, add N to the completed store, delete the checkpoints it
     subsumed and the shared files no retained checkpoint references any more;
  4. abort the older pending checkpoints, which can no longer complete usefully;
  5. notify every task that N is complete (2PC sinks commit now).
Triggering N takes the state of every operator coordinator (split enumerators, global
committers) in the same step as the triggers are sent; it goes into N's metadata, and the
operator coordinators hear of N's completion or abort when the tasks do
(``operator_coordinator_checkpoints.py``).
Aborting N deletes its directory and the shared files its acknowledgements listed, and tells
every task. When an attempt has ended (every one of its tasks stopped), files no retained
checkpoint references are swept: uploads of tasks that died or were stopped before
acknowledging.

A savepoint is asked for (``trigger_savepoint``) into a new directory under a target, and goes
its own way: its files are all in that directory (nothing shared, nothing registered), it is
never retained, subsumed or used for failover, and its failure fails nothing but the request.
Completing it writes its ``_metadata`` there; only a savepoint that ends the job (stop) tells the
tasks it completed, so a savepoint taken while the job goes on commits nothing. A job restored
with ``claim-mode: CLAIM`` owns the snapshot it started from and deletes it once its own
checkpoints would have subsumed it.

**Threading:** the JobMaster's thread only. **I/O:** through ``CoordinatorStorage``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_failure_manager import (
    CheckpointFailureManager,
    CheckpointFailureReason,
)
from barrierflow.coordination.checkpoint_request_decider import (
    CheckpointRequest,
    CheckpointRequestDecider,
    RequestKind,
    TriggerConfig,
    TriggerNow,
    WaitUntil,
)
from barrierflow.coordination.checkpoint_stats_listener import CheckpointStatsListener
from barrierflow.coordination.clock import Clock, SystemClock
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.coordinator_storage import CoordinatorStorage, SavepointStorage
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
from barrierflow.coordination.shared_state_registry import SharedStateRegistry
from barrierflow.coordination.storage_io import InlineStorageIo, StorageIo
from barrierflow.errors import CorruptCheckpointError, StorageConfigError
from barrierflow.graph.job_graph import JobGraph
from barrierflow.human_units import human_bytes
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    CheckpointBarrier,
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.state.state_schema import type_text

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
class SavepointResult:
    """What the requester of a savepoint is told, once: where it is, or why it failed."""

    checkpoint_id: int | None
    path: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class ClaimedSnapshot:
    """The snapshot a job restored from in CLAIM mode: it owns it, and deletes it when its own
    checkpoints subsume it."""

    root: str  # what its paths are relative to
    metadata: CheckpointMetadata


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
    ) -> None:
        """``stats_listener``: told of every checkpoint's progress (the REST API's statistics).
        ``storage_io``: where writes and deletes run (default: at once, on this thread).
        ``operator_coordinators``: the job's, snapshotted with every trigger (default: none)."""
        self._job_id = job_id
        self._operator_coordinators = operator_coordinators or NoOperatorCoordinators()
        self._io = storage_io or InlineStorageIo()
        self._stats = stats_listener
        self._graph = job_graph
        self._storage = storage
        self._savepoint_storage = savepoint_storage
        self._config = config
        self._gateway = gateway
        self._claimed = claimed
        self._requesters: dict[CheckpointRequest, Callable[[SavepointResult], None]] = {}
        self._savepoint_done: dict[int, Callable[[SavepointResult], None]] = {}
        self._clock = clock or SystemClock()
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
        self._unusable: set[int] = set()  # retained, but a restore found a file corrupt
        self.registry = SharedStateRegistry()
        self.history = CheckpointHistory(job_id, job_graph.job_name)
        self._next_id = first_checkpoint_id
        self._tasks: frozenset[TaskKey] = frozenset()
        self._sources: list[TaskKey] = []
        self._aborted: set[int] = set()  # this attempt's: their late acks' uploads are deleted
        self.num_completed = 0

    @property
    def num_failed(self) -> int:
        return self._failures.num_failed

    def take_over(self) -> bool:
        """Adopts the retained checkpoints a previous coordinator of this job left: the newest
        ``num-retained`` readable ones go into the store, the shared state registry is rebuilt
        from their metadata, checkpoint ids continue after every id already used, and what
        they do not reference is deleted. False when there was no readable checkpoint (ids
        continue after the ones used all the same)."""
        retained: list[CheckpointMetadata] = []
        for checkpoint_id in reversed(self._storage.list_completed()):
            if len(retained) == self._config.num_retained:
                break
            try:
                retained.append(self._storage.read_metadata(checkpoint_id))
            except CorruptCheckpointError as e:
                log.error("%s; not taken over", e)
        for metadata in reversed(retained):
            self.store.add(metadata)
        self.registry = SharedStateRegistry.rebuild(
            (m.checkpoint_id, m.shared_paths()) for m in retained
        )
        history = self._storage.read_history()
        if history is not None and history.job_id == self._job_id:
            self.history = history
        used = [
            *self._storage.list_checkpoint_dirs(),
            *(r.checkpoint_id for r in self.history.records),
            *(
                cid
                for cid in map(layout.parse_shared_state_file, self._storage.list_shared())
                if cid is not None
            ),
        ]
        self._next_id = max([self._next_id - 1, *used]) + 1  # also past a killed one's tries
        if not retained:
            return False
        log.info(
            "Took over %d retained checkpoint(s) of job %s: %s",
            len(retained),
            self._job_id,
            ", ".join(str(m.checkpoint_id) for m in reversed(retained)),
        )
        self._sweep_orphans()
        return True

    # --- attempts -------------------------------------------------------------------------------

    def start_attempt(self, tasks: frozenset[TaskKey], sources: list[TaskKey]) -> None:
        self.abort_all("the job restarted")
        for request in self._decider.queued_savepoints():
            if request.options.ends_job:  # the tasks it would have stopped are gone
                self._fail_request(request, "the job restarted before it stopped; stop it again")
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
        if target_dir is None:
            on_done(
                SavepointResult(
                    None,
                    error="no savepoint directory: give a target directory or set "
                    "execution.checkpointing.savepoint-dir",
                )
            )
            return
        try:
            location = self._savepoint_storage.create(target_dir, self._job_id)
        except (StorageConfigError, OSError) as e:
            on_done(SavepointResult(None, error=str(e)))
            return
        request = CheckpointRequest(
            RequestKind.SAVEPOINT,
            CheckpointOptions(kind, snapshot_format, target_location=location),
        )
        self._requesters[request] = on_done
        self._decider.request_savepoint(request)
        log.info("Savepoint requested into %s (%s)", location, snapshot_format.value)

    def shutdown(self, reason: str) -> None:
        """The job ended: what is pending is aborted and every request still queued fails."""
        self.abort_all(reason)
        for request in self._decider.queued_savepoints():
            self._fail_request(request, reason)

    def _fail_request(self, request: CheckpointRequest, reason: str) -> None:
        self._decider.withdraw(request)
        self._savepoint_storage.discard(request.options.target_location)
        self._requesters.pop(request)(SavepointResult(None, error=reason))

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
        cid = self._next_id
        self._next_id += 1  # even when a coordinator fails: no coordinator sees an id twice
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
            self._savepoint_done[cid] = self._requesters.pop(request)
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
                new = _uploaded_by(ack.checkpoint_id, ack.operator_states.values())
                self._delete_shared(self.registry.unregister_aborted(ack.checkpoint_id, new))
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

    def _complete(self, pending: PendingCheckpoint) -> None:
        if pending.options.is_savepoint:
            self._complete_savepoint(pending)
            return
        cid = pending.checkpoint_id
        # 1. metadata from the acknowledgements, if every file it references is still there
        metadata = self._build_metadata(pending)
        states = [s for op in metadata.operators for s in op.subtasks]
        reused = metadata.shared_paths() - set(_uploaded_by(cid, states))
        missing = self.registry.validate_references(cid, reused)
        if missing:
            self._abort(
                cid,
                CheckpointFailureReason.STALE_REFERENCE,
                f"it references {len(missing)} shared file(s) of a checkpoint no longer "
                f"retained, e.g. {sorted(missing)[0]}",
                references_released=True,
            )
            return
        # 2. the completion marker, last and atomically; steps 3-5 once it is on storage
        self._write_marker(
            pending,
            lambda: self._storage.write_metadata(metadata),
            lambda now, duration_ms: self._completed(pending, metadata, now, duration_ms),
            discard=lambda: self._discard(cid),
        )

    def _completed(
        self,
        pending: PendingCheckpoint,
        metadata: CheckpointMetadata,
        now: float,
        duration_ms: float,
    ) -> None:
        cid = pending.checkpoint_id
        # 3. shared files and retention
        self._delete_shared(self.registry.register_checkpoint(cid, metadata.shared_paths()))
        subsumed = self.store.add(metadata)
        for checkpoint in subsumed:
            self._discard(checkpoint.checkpoint_id)
        self._delete_shared(self.registry.subsume(c.checkpoint_id for c in subsumed))
        self._dispose_claimed()
        self._decider.completed(pending.options, now)
        self._failures.completed()
        self.num_completed += 1
        # 4. older pending checkpoints
        for older in self._pending.subsumed_by(cid):
            self._abort(older, CheckpointFailureReason.SUBSUMED, f"subsumed by checkpoint {cid}")
        record = self._record(pending, CheckpointStatus.COMPLETED, duration_ms)
        self._add_to_history(record)
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
        # 5. notify: sinks commit, incremental backends may reuse this checkpoint's files
        self._notify_complete(cid)

    def _write_marker(
        self,
        pending: PendingCheckpoint,
        write: Callable[[], object],
        then: Callable[[float, float], None],
        discard: Callable[[], None],
    ) -> None:
        """Writes the completion marker with ``write`` (off this thread), then ends ``pending``
        as pending and calls ``then(now, its duration in ms)``. Aborts it instead when the
        marker cannot be written; ``discard``s what was written when it was aborted meanwhile
        (the attempt ended, or the job)."""
        cid = pending.checkpoint_id
        pending.finalizing = True

        def written(error: BaseException | None) -> None:
            if self._pending.get(cid) is not pending:  # aborted while its marker was written
                if error is None:
                    discard()
                return
            if error is not None:
                self._abort(
                    cid,
                    CheckpointFailureReason.FINALIZE_FAILED,
                    f"writing its metadata failed: {error}",
                )
                return
            now = self._clock.monotonic_s()
            duration_ms = self._pending.elapsed_s(cid, now) * 1000
            self._pending.remove(cid)
            then(now, duration_ms)

        self._io.run(write, written)

    def _notify_complete(self, checkpoint_id: int) -> None:
        for task in self._tasks:
            self._gateway.notify_checkpoint_complete(task, checkpoint_id)
        self._operator_coordinators.checkpoint_complete(checkpoint_id)

    def _complete_savepoint(self, pending: PendingCheckpoint) -> None:
        """Writes its metadata into its directory; tells the tasks only if it ends the job."""
        location = pending.options.target_location
        metadata = self._build_metadata(pending)
        self._write_marker(
            pending,
            lambda: self._savepoint_storage.write_metadata(location, metadata),
            lambda now, duration_ms: self._savepoint_completed(pending, now, duration_ms),
            discard=lambda: self._discard_savepoint(location),
        )

    def _savepoint_completed(
        self, pending: PendingCheckpoint, now: float, duration_ms: float
    ) -> None:
        cid, options = pending.checkpoint_id, pending.options
        location = options.target_location
        self._decider.completed(options, now)
        record = self._record(pending, CheckpointStatus.COMPLETED, duration_ms)
        self._add_to_history(record)
        log.info(
            "Completed savepoint %d (%s, %s) in %.0f ms: %s, %d tasks. Path: %s",
            cid,
            options.kind.value,
            options.snapshot_format.value,
            record.duration_ms,
            human_bytes(record.state_size),
            record.num_tasks,
            location,
        )
        if options.commits:
            self._notify_complete(cid)
        self._savepoint_done.pop(cid)(SavepointResult(cid, path=location))

    def _dispose_claimed(self) -> None:
        """The claimed snapshot goes once the job's own retained checkpoints would have
        subsumed it (it counts as the oldest of them)."""
        claimed = self._claimed
        if claimed is None or len(self.store.all()) < self._config.num_retained:
            return
        self._claimed = None

        def dispose() -> None:
            try:
                self._savepoint_storage.dispose(claimed.root, claimed.metadata)
            except OSError as e:
                log.warning("Could not delete the claimed snapshot %s: %s", claimed.root, e)
                return
            log.info(
                "Deleted the claimed snapshot %s (checkpoint %d), subsumed",
                claimed.root,
                claimed.metadata.checkpoint_id,
            )

        self._io.run(dispose)

    def _record(
        self,
        pending: PendingCheckpoint,
        status: CheckpointStatus,
        duration_ms: float,
        reason: str | None = None,
    ) -> CheckpointRecord:
        acks = list(pending.acknowledged.values())
        states = pending.acknowledged_states()
        cid = pending.checkpoint_id
        return CheckpointRecord(
            checkpoint_id=cid,
            status=status,
            trigger_timestamp_ms=pending.trigger_timestamp_ms,
            end_timestamp_ms=self._clock.wall_ms(),
            duration_ms=duration_ms,
            state_size=sum(s.state_size() for s in states),
            checkpointed_size=sum(s.checkpointed_size(cid) for s in states),
            num_tasks=len(pending.tasks_to_ack),
            num_acknowledged=len(acks),
            failure_reason=reason,
            subtasks=[a.stats for a in acks],
            kind=pending.options.kind,
            snapshot_format=pending.options.snapshot_format,
            external_path=pending.options.target_location or None,
            unaligned=any(a.stats.unaligned for a in acks),
            persisted_data=sum(a.stats.persisted_data for a in acks),
            processed_data=sum(a.stats.processed_data for a in acks),
        )

    def _add_to_history(self, record: CheckpointRecord) -> None:
        self.history.add(record)
        if self._stats is not None:
            self._stats.checkpoint_recorded(record)
        history = CheckpointHistory(
            self.history.job_id, self.history.job_name, [*self.history.records]
        )

        def write() -> None:
            try:
                self._storage.write_history(history)
            except OSError as e:
                log.warning("Could not write the checkpoint history: %s", e)

        self._io.run(write)

    def _build_metadata(self, pending: PendingCheckpoint) -> CheckpointMetadata:
        operators = []
        coordinator_states = pending.coordinator_states
        for vertex in self._graph.vertices:
            for node in vertex.chain:
                subtasks: list[OperatorSubtaskState] = []
                for i in range(vertex.parallelism):
                    ack = pending.acknowledged[(vertex.id, i)]
                    state = ack.operator_states.get(node.uid)
                    if state is not None:
                        subtasks.append(state)
                coordinator = coordinator_states.get(node.uid)
                operators.append(
                    OperatorState(
                        node.uid,
                        node.name,
                        vertex.parallelism,
                        self._graph.max_parallelism,
                        subtasks,
                        None if coordinator is None else OperatorCoordinatorState(coordinator),
                        key_type=type_text(node.key_type) if node.key_type else "",
                    )
                )
        return CheckpointMetadata(
            job_id=self._job_id,
            job_name=self._graph.job_name,
            checkpoint_id=pending.checkpoint_id,
            trigger_timestamp_ms=pending.trigger_timestamp_ms,
            completion_timestamp_ms=self._clock.wall_ms(),
            operators=operators,
            stats=[a.stats for a in pending.acknowledged.values()],
            kind=pending.options.kind,
            snapshot_format=pending.options.snapshot_format,
        )

    # --- aborting -------------------------------------------------------------------------------

    def attempt_ended(self, reason: str) -> None:
        """Every task of the attempt has stopped: aborts what is pending, then sweeps."""
        self.abort_all(reason)
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
        pending.discarded = True
        options = pending.options
        if options.is_savepoint:
            self._discard_savepoint(options.target_location)
        else:
            self._aborted.add(cid)
            uploaded = _uploaded_by(cid, pending.acknowledged_states())
            self._delete_shared(self.registry.unregister_aborted(cid, uploaded))
            self._discard(cid)
        self._decider.aborted(options)
        self._add_to_history(self._record(pending, CheckpointStatus.FAILED, elapsed_ms, detail))
        for task in self._tasks:
            self._gateway.notify_checkpoint_aborted(task, cid, references_released)
        self._operator_coordinators.checkpoint_aborted(cid)
        what = "Savepoint" if options.is_savepoint else "Checkpoint"
        log.warning("%s %d aborted: %s", what, cid, detail)
        if options.is_savepoint:
            self._savepoint_done.pop(cid)(
                SavepointResult(cid, error=f"savepoint {cid} failed: {detail}")
            )
        fail = self._failures.failed(cid, options, reason, detail)
        if fail is not None:
            raise CheckpointFailuresExceeded(fail.reason)

    def _discard_savepoint(self, location: str) -> None:
        def discard() -> None:
            try:
                self._savepoint_storage.discard(location)
            except OSError as e:
                log.warning("Could not delete the failed savepoint's directory %s: %s", location, e)

        self._io.run(discard)

    def _discard(self, cid: int) -> None:
        def discard() -> None:
            try:
                self._storage.discard_checkpoint_dir(cid)
            except OSError as e:
                log.warning("Could not delete the files of checkpoint %d: %s", cid, e)

        self._io.run(discard)

    def _delete_shared(self, paths: list[str]) -> None:
        if not paths:
            return

        def delete() -> None:
            try:
                self._storage.delete_files(paths)
            except OSError as e:
                log.warning(
                    "Could not delete %d shared file(s), e.g. %s: %s", len(paths), paths[0], e
                )

        self._io.run(delete)

    def _sweep_orphans(self) -> None:
        """Deletes what no retained checkpoint references: shared files and ``chk-N``
        directories written by tasks that died before their checkpoint completed or aborted
        here. Only when no task of the job runs (the JobMaster starts no attempt before its
        storage work is done)."""
        retained = {c.checkpoint_id for c in self.store.all()}
        known = self.registry.known_keys()  # read here: the registry is this thread's

        def sweep() -> None:
            try:
                orphans = [p for p in self._storage.list_shared() if p not in known]
                self._storage.delete_files(orphans)
                stale = [c for c in self._storage.list_checkpoint_dirs() if c not in retained]
                for cid in stale:
                    self._storage.discard_checkpoint_dir(cid)
            except OSError as e:
                log.warning("Could not sweep files of failed checkpoints: %s", e)
                return
            if orphans or stale:
                log.info(
                    "Deleted %d shared file(s) and %d checkpoint directories of checkpoints "
                    "that never completed",
                    len(orphans),
                    len(stale),
                )

        self._io.run(sweep)

    # --- restore --------------------------------------------------------------------------------

    def mark_unusable(self, checkpoint_id: int, reason: str) -> None:
        """A restore of ``checkpoint_id`` found one of its files corrupt: no restore picks it
        again (``latest_restorable`` falls back to an older one)."""
        self._unusable.add(checkpoint_id)
        log.error(
            "Checkpoint %d cannot be restored (%s); falling back to an older checkpoint",
            checkpoint_id,
            reason,
        )

    def latest_restorable(self) -> CheckpointMetadata | None:
        """The newest retained checkpoint whose metadata reads back intact and whose files no
        restore found corrupt; falls back to older ones."""
        for candidate in reversed(self.store.all()):
            if candidate.checkpoint_id in self._unusable:
                continue
            try:
                return self._storage.read_metadata(candidate.checkpoint_id)
            except CorruptCheckpointError as e:
                log.error("%s; falling back to an older checkpoint", e)
        return None


def _uploaded_by(checkpoint_id: int, states: Iterable[OperatorSubtaskState]) -> list[str]:
    """The shared files that ``checkpoint_id`` itself uploaded, in these subtask states."""
    return [path for state in states for path in state.shared_paths(uploaded_by=checkpoint_id)]
