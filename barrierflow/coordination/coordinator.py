"""CheckpointCoordinator: triggers checkpoints, collects acknowledgements, completes them.

The decisions live in pure parts (``TriggerPolicy``, ``PendingCheckpoint``,
``CompletedCheckpointStore``); this shell carries them out: it sends triggers and
notifications through the JobMaster's gateway, writes metadata and deletes files.

Completing checkpoint N, in order:
  1. build the metadata from every task's acknowledgement; abort N instead if it references a
     shared file that may already be deleted (``SharedStateRegistry.validate_references``);
  2. write ``chk-N/_metadata``, last and atomically: from now on N is restorable;
  3. register N's shared files, add N to the completed store, delete the checkpoints it
     subsumed and the shared files no retained checkpoint references any more;
  4. notify every task that N is complete (2PC sinks commit now).
Aborting N deletes its directory and the shared files its acknowledgements listed. When an
attempt has ended (every one of its tasks stopped), files no retained checkpoint references are
swept: uploads of tasks that died or were stopped before acknowledging.

**Threading:** the JobMaster's thread only. **I/O:** checkpoint storage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointHistory, CheckpointRecord, CheckpointStatus
from barrierflow.checkpoint.metadata import (
    CheckpointMetadata,
    OperatorState,
    OperatorSubtaskState,
)
from barrierflow.checkpoint.storage import CheckpointStorage
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.pending_checkpoint import (
    AckResult,
    PendingCheckpoint,
    TaskAcknowledgement,
    TaskKey,
)
from barrierflow.coordination.shared_state_registry import SharedStateRegistry
from barrierflow.coordination.trigger_policy import TriggerNow, TriggerPolicy, WaitUntil
from barrierflow.errors import CorruptCheckpointError
from barrierflow.graph.job_graph import JobGraph
from barrierflow.protocol import messages as msg
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT, FINAL_CHECKPOINT

log = logging.getLogger("barrierflow.checkpoint")


class CheckpointFailuresExceeded(Exception):
    """More consecutive checkpoint failures than ``tolerable-failed-checkpoints``."""


SLOW_REPORT_AFTER_S = 30.0


@dataclass(frozen=True)
class CoordinatorConfig:
    interval_s: float
    timeout_s: float
    min_pause_s: float
    max_concurrent: int
    tolerable_failures: int
    num_retained: int
    checkpoints_after_tasks_finish: bool = True


class CheckpointCoordinator:
    def __init__(
        self,
        job_id: str,
        job_graph: JobGraph,
        storage: CheckpointStorage,
        config: CoordinatorConfig,
        send_to_task: Callable[[TaskKey, msg.Message], None],
        first_checkpoint_id: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._job_id = job_id
        self._graph = job_graph
        self._storage = storage
        self._config = config
        self._send = send_to_task
        self._clock = clock
        self._policy = TriggerPolicy(config.interval_s, config.min_pause_s, config.max_concurrent)
        self.store = CompletedCheckpointStore(config.num_retained)
        self._pending: dict[int, PendingCheckpoint] = {}
        self._started: dict[int, float] = {}
        self._next_slow_report: dict[int, float] = {}
        self._next_id = first_checkpoint_id
        self._attempt = 0
        self._tasks: frozenset[TaskKey] = frozenset()
        self._sources: list[TaskKey] = []
        self._last_trigger_s: float | None = None
        self._last_completion_s: float | None = None
        self._consecutive_failures = 0
        self._sources_finished = False
        self._final_due = False
        self._final_completed = False
        self._some_source_ended = False
        self.num_completed = 0
        self.num_failed = 0
        self.history = CheckpointHistory(job_id, job_graph.job_name)
        self.registry = SharedStateRegistry()
        self._aborted: set[int] = set()  # this attempt's: their late acks' uploads are deleted

    def take_over(self) -> bool:
        """Adopts the retained checkpoints a previous coordinator of this job left: the newest
        ``num-retained`` readable ones go into the store, the shared state registry is rebuilt
        from their metadata, checkpoint ids continue after every id already used, and what
        they do not reference is deleted. False when there was no readable checkpoint."""
        retained: list[CheckpointMetadata] = []
        for location in reversed(self._storage.list_completed()):
            if len(retained) == self._config.num_retained:
                break
            try:
                retained.append(self._storage.read_metadata(location.checkpoint_id))
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
        if not retained:
            return False
        shared = self._storage.list_shared()
        used = [
            *self._storage.list_checkpoint_dirs(),
            *(r.checkpoint_id for r in self.history.records),
            *(cid for cid in map(layout.parse_shared_state_file, shared) if cid is not None),
        ]
        self._next_id = max([self._next_id - 1, *used]) + 1
        log.info(
            "Took over %d retained checkpoint(s) of job %s: %s",
            len(retained),
            self._job_id,
            ", ".join(str(m.checkpoint_id) for m in reversed(retained)),
        )
        self._sweep_orphans()
        return True

    # --- attempts -------------------------------------------------------------------------------

    def start_attempt(
        self, attempt: int, tasks: frozenset[TaskKey], sources: list[TaskKey]
    ) -> None:
        self.abort_all("the job restarted")
        self._aborted.clear()
        self._attempt = attempt
        self._tasks = tasks
        self._sources = sources
        self._sources_finished = False
        self._final_due = False
        self._final_completed = False
        self._some_source_ended = False

    def all_tasks_running(self) -> None:
        """The first checkpoint of an attempt comes one interval after all tasks run."""
        self._last_trigger_s = self._clock()

    def source_ended(self) -> None:
        """One source subtask read all of its input."""
        self._some_source_ended = True

    def sources_finished(self) -> None:
        """Every source read all of its input: a final checkpoint is due now, and every later
        one is final too (in case the first is aborted)."""
        self._sources_finished = True
        self._final_due = True

    # --- triggering -----------------------------------------------------------------------------

    def tick(self) -> float:
        """Triggers what is due and aborts what timed out; returns when to tick next."""
        now = self._clock()
        for cid, started in list(self._started.items()):
            if now - started > self._config.timeout_s:
                self._abort(cid, f"timed out after {self._config.timeout_s:g} s", failure=True)
            elif now - started > self._next_slow_report.get(cid, SLOW_REPORT_AFTER_S):
                self._next_slow_report[cid] = now - started + SLOW_REPORT_AFTER_S
                waiting = sorted(self._pending[cid].not_yet_acknowledged)
                log.warning(
                    "Checkpoint %d has been running for %.0f s; waiting for %d of %d tasks: %s",
                    cid,
                    now - started,
                    len(waiting),
                    len(self._tasks),
                    ", ".join(f"{v}[{i}]" for v, i in waiting[:10]),
                )
        if self._final_completed:
            return now + 1.0  # the tasks are ending; a later checkpoint could never complete
        if (
            not self._config.checkpoints_after_tasks_finish
            and self._some_source_ended
            and not self._sources_finished
        ):
            return now + 0.1  # no checkpoints while only some sources have finished
        decision = self._policy.decide(
            now,
            self._last_trigger_s,
            self._last_completion_s,
            len(self._pending),
            urgent=self._final_due,
        )
        if isinstance(decision, TriggerNow):
            self._final_due = False
            self._trigger(now)
            return now + min(self._config.interval_s, 0.5)
        if isinstance(decision, WaitUntil):
            return decision.deadline_s
        return now + 0.1

    def _trigger(self, now: float) -> None:
        cid = self._next_id
        self._next_id += 1
        timestamp_ms = int(time.time() * 1000)
        is_final = self._sources_finished
        self._pending[cid] = PendingCheckpoint(cid, timestamp_ms, self._tasks, is_final)
        self.registry.checkpoint_triggered(cid)
        self._started[cid] = now
        self._last_trigger_s = now
        for source in self._sources:
            options = FINAL_CHECKPOINT if is_final else CHECKPOINT
            self._send(source, msg.TriggerCheckpoint(self._attempt, cid, timestamp_ms, options))

    # --- acknowledgements -----------------------------------------------------------------------

    def on_acknowledge(self, ack: msg.AcknowledgeCheckpoint) -> None:
        pending = self._pending.get(ack.checkpoint_id)
        if pending is None:
            if ack.checkpoint_id in self._aborted:  # its uploads can never be referenced
                new = _uploaded_by(ack.checkpoint_id, ack.operator_states.values())
                self._delete_shared(self.registry.unregister_aborted(ack.checkpoint_id, new))
            return
        result = pending.acknowledge(
            TaskAcknowledgement((ack.vertex, ack.subtask), ack.operator_states, ack.stats)
        )
        if result is AckResult.SUCCESS and pending.is_fully_acknowledged:
            self._complete(pending)

    def on_decline(self, decline: msg.DeclineCheckpoint) -> None:
        if decline.checkpoint_id in self._pending:
            self._abort(
                decline.checkpoint_id,
                f"declined by {decline.vertex}[{decline.subtask}]: {decline.reason}",
                failure=True,
            )

    def _complete(self, pending: PendingCheckpoint) -> None:
        cid = pending.checkpoint_id
        # 1. metadata from the acknowledgements, if every file it references is still there
        metadata = self._build_metadata(pending)
        states = [s for op in metadata.operators for s in op.subtasks]
        reused = metadata.shared_paths() - set(_uploaded_by(cid, states))
        missing = self.registry.validate_references(cid, reused)
        if missing:
            self._abort(
                cid,
                f"it references {len(missing)} shared file(s) of a checkpoint no longer "
                f"retained, e.g. {sorted(missing)[0]}",
                failure=True,
                references_released=True,
            )
            return
        # 2. the completion marker, last and atomically
        try:
            self._storage.write_metadata(metadata)
        except OSError as e:
            self._abort(cid, f"writing its metadata failed: {e}", failure=True)
            return
        del self._pending[cid]
        started = self._started.pop(cid)
        # 3. shared files and retention
        self._delete_shared(self.registry.register_checkpoint(cid, metadata.shared_paths()))
        subsumed = self.store.add(metadata)
        for checkpoint in subsumed:
            self._discard(checkpoint.checkpoint_id)
        self._delete_shared(self.registry.subsume(c.checkpoint_id for c in subsumed))
        now = self._clock()
        self._last_completion_s = now
        self._consecutive_failures = 0
        self._final_completed = pending.is_final
        self.num_completed += 1
        # Older pending checkpoints can never complete usefully once a newer one did.
        for older in [c for c in self._pending if c < cid]:
            self._abort(older, f"subsumed by checkpoint {cid}", failure=False)
        record = self._record(pending, CheckpointStatus.COMPLETED, (now - started) * 1000)
        self._add_to_history(record)
        log.info(
            "Completed checkpoint %d in %.0f ms: %s (%s written), %d tasks",
            cid,
            record.duration_ms,
            _human_bytes(record.state_size),
            _human_bytes(record.checkpointed_size),
            record.num_tasks,
        )
        # 4. notify: sinks commit, incremental backends may reuse this checkpoint's files
        for task in self._tasks:
            self._send(task, msg.NotifyCheckpointComplete(self._attempt, cid))

    def _record(
        self,
        pending: PendingCheckpoint,
        status: CheckpointStatus,
        duration_ms: float,
        reason: str | None = None,
    ) -> CheckpointRecord:
        acks = list(pending.acknowledged.values())
        states = [s for a in acks for s in a.operator_states.values()]
        cid = pending.checkpoint_id
        return CheckpointRecord(
            checkpoint_id=pending.checkpoint_id,
            status=status,
            trigger_timestamp_ms=pending.trigger_timestamp_ms,
            end_timestamp_ms=int(time.time() * 1000),
            duration_ms=duration_ms,
            state_size=sum(s.state_size() for s in states),
            checkpointed_size=sum(s.checkpointed_size(cid) for s in states),
            num_tasks=len(pending.tasks_to_ack),
            num_acknowledged=len(acks),
            failure_reason=reason,
            subtasks=[a.stats for a in acks],
        )

    def _add_to_history(self, record: CheckpointRecord) -> None:
        self.history.add(record)
        try:
            self._storage.write_history(self.history)
        except OSError as e:
            log.warning("Could not write the checkpoint history: %s", e)

    def _build_metadata(self, pending: PendingCheckpoint) -> CheckpointMetadata:
        operators = []
        for vertex in self._graph.vertices:
            for node in vertex.chain:
                subtasks: list[OperatorSubtaskState] = []
                for i in range(vertex.parallelism):
                    ack = pending.acknowledged[(vertex.id, i)]
                    state = ack.operator_states.get(node.uid)
                    if state is not None:
                        subtasks.append(state)
                operators.append(
                    OperatorState(
                        node.uid,
                        node.name,
                        vertex.parallelism,
                        self._graph.max_parallelism,
                        subtasks,
                    )
                )
        return CheckpointMetadata(
            job_id=self._job_id,
            job_name=self._graph.job_name,
            checkpoint_id=pending.checkpoint_id,
            trigger_timestamp_ms=pending.trigger_timestamp_ms,
            completion_timestamp_ms=int(time.time() * 1000),
            operators=operators,
            stats=[a.stats for a in pending.acknowledged.values()],
        )

    # --- aborting -------------------------------------------------------------------------------

    def attempt_ended(self, reason: str) -> None:
        """Every task of the attempt has stopped: aborts what is pending, then sweeps."""
        self.abort_all(reason)
        self._sweep_orphans()

    def abort_all(self, reason: str) -> None:
        for cid in list(self._pending):
            self._abort(cid, reason, failure=False)

    def _abort(
        self, cid: int, reason: str, failure: bool, references_released: bool = False
    ) -> None:
        pending = self._pending.pop(cid, None)
        started = self._started.pop(cid, None)
        if pending is None:
            return
        pending.discarded = True
        self._aborted.add(cid)
        acknowledged = [
            s for a in pending.acknowledged.values() for s in a.operator_states.values()
        ]
        self._delete_shared(self.registry.unregister_aborted(cid, _uploaded_by(cid, acknowledged)))
        if self._sources_finished:
            self._final_due = True  # the job cannot end before a final checkpoint completes
        elapsed_ms = (self._clock() - started) * 1000 if started is not None else 0.0
        self._add_to_history(self._record(pending, CheckpointStatus.FAILED, elapsed_ms, reason))
        self._discard(cid)
        for task in self._tasks:
            self._send(task, msg.NotifyCheckpointAborted(self._attempt, cid, references_released))
        log.warning("Checkpoint %d aborted: %s", cid, reason)
        if failure:
            self._count_failure(cid, reason)

    def _count_failure(self, cid: int, reason: str) -> None:
        self.num_failed += 1
        self._consecutive_failures += 1
        if self._consecutive_failures > self._config.tolerable_failures:
            raise CheckpointFailuresExceeded(
                f"checkpoint {cid} failed ({reason}); {self._consecutive_failures} consecutive "
                f"failures exceed tolerable-failed-checkpoints = {self._config.tolerable_failures}"
            )

    def _discard(self, cid: int) -> None:
        try:
            self._storage.discard_checkpoint_dir(cid)
        except OSError as e:
            log.warning("Could not delete the files of checkpoint %d: %s", cid, e)

    def _delete_shared(self, paths: list[str]) -> None:
        if not paths:
            return
        try:
            self._storage.delete_files(paths)
        except OSError as e:
            log.warning("Could not delete %d shared file(s), e.g. %s: %s", len(paths), paths[0], e)

    def _sweep_orphans(self) -> None:
        """Deletes what no retained checkpoint references: shared files and ``chk-N``
        directories written by tasks that died before their checkpoint completed or aborted
        here. Only when no task of the job runs."""
        retained = {c.checkpoint_id for c in self.store.all()}
        try:
            orphans = [p for p in self._storage.list_shared() if self.registry.entry(p) is None]
            self._storage.delete_files(orphans)
            stale = [c for c in self._storage.list_checkpoint_dirs() if c not in retained]
            for cid in stale:
                self._storage.discard_checkpoint_dir(cid)
        except OSError as e:
            log.warning("Could not sweep files of failed checkpoints: %s", e)
            return
        if orphans or stale:
            log.info(
                "Deleted %d shared file(s) and %d checkpoint directories of checkpoints that "
                "never completed",
                len(orphans),
                len(stale),
            )

    # --- restore --------------------------------------------------------------------------------

    def latest_restorable(self) -> CheckpointMetadata | None:
        """The newest retained checkpoint whose metadata reads back intact; falls back to older
        ones when the newest is corrupt or truncated."""
        for candidate in reversed(self.store.all()):
            try:
                return self._storage.read_metadata(candidate.checkpoint_id)
            except CorruptCheckpointError as e:
                log.error("%s; falling back to an older checkpoint", e)
        return None


def _uploaded_by(checkpoint_id: int, states: Iterable[OperatorSubtaskState]) -> list[str]:
    """The shared files that ``checkpoint_id`` itself uploaded, in these subtask states."""
    return [path for state in states for path in state.shared_paths(uploaded_by=checkpoint_id)]


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
