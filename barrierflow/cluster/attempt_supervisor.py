"""Attempt supervision: starts an attempt of the job, watches it until it ends or fails, and
makes sure it stopped.

Starting attempt N: assign each subtask its share of the checkpoint the attempt restores,
restore the operator coordinators from it, and submit the slots as one deployment (a Spark
barrier stage). Supervising: the messages of the attempt's slots and tasks, dispatched by
type (one table, ``_handlers``), the endpoints of every input gate handed to the slots once the
last slot registered, checkpoint ticks once every task runs, heartbeats both ways, the operator
coordinators' timers. Stopping, in order:
  1. abort what is pending, cancel the attempt and make sure every one of its subtasks stopped
     (each slot confirms, or its process is gone, or it stayed silent for longer than it takes
     a slot to stop itself);
  2. cancel the deployment and wait for it.
Messages of other attempts are dropped, and the senders of older ones told to cancel
(fencing); records the tasks send the driver must also carry the attempt's random token.

**Threading:** the JobMaster's thread. **I/O:** the control channel, the deployer.
"""

from __future__ import annotations

import logging
import os
import random
import re
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.cluster import collected_records
from barrierflow.cluster.attempt import Attempt
from barrierflow.cluster.attempt_deployment import slot_descriptors
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.deployer import Deployer, SubmittedAttempt
from barrierflow.cluster.job_outcome import RestoreStats
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_status import TaskState
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.operator_coordinator_host import OperatorCoordinatorHost
from barrierflow.cluster.recovery_times import RecoveryTimes
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointFailuresExceeded,
)
from barrierflow.coordination.operator_coordinator_checkpoints import OperatorCoordinatorFailed
from barrierflow.coordination.state_assignment import assign_state
from barrierflow.coordination.state_mapping import OperatorFate, map_state

log = logging.getLogger("barrierflow.jobmaster")

HEARTBEAT_EVERY_S = 0.5
# A restart delay at least this long starts the next attempt's workers meanwhile: they are up
# before it ends (forking two and importing the task runtime takes 0.3-0.5 s on two cores);
# a shorter one would leave them starting as the attempt is submitted, which then waits.
PREPARE_WITHIN_DELAY_S = 0.5


class _NothingSubmitted:
    """An attempt that failed before its slots were submitted."""

    def cancel(self) -> None:
        pass

    def join(self, timeout_s: float) -> bool:
        return True


class AttemptListener:
    """What a part of the JobMaster hears of the running attempt (each does nothing unless
    overridden): the rescaler waits for a rescaled attempt's first record, reactive mode
    looks at the slots the cluster offers while the job runs."""

    def attempt_running(self, number: int, now: float) -> None:
        """Every task of attempt ``number`` runs (``now``: epoch seconds)."""

    def attempt_sampled(self, number: int, first_record_at: float | None, now: float) -> None:
        """A heartbeat of attempt ``number``; when it processed its first record, if it did."""

    def attempt_supervised(self, number: int, now: float) -> None:
        """Every heartbeat period while attempt ``number`` runs (``now``: monotonic)."""


class AttemptSupervisor:
    def __init__(
        self,
        plan: JobPlan,
        deployer: Deployer,
        channel: ControlChannel,
        coordinator: CheckpointCoordinator,
        status_view: JobStatusView,
        operator_coordinators: OperatorCoordinatorHost,
        canceled: Callable[[], bool],
        listeners: Sequence[AttemptListener] = (),
    ) -> None:
        """``canceled``: whether the job was canceled (then no attempt goes on);
        ``listeners``: hear when an attempt's tasks all run, and its heartbeats."""
        self._plan = plan
        self._deployer = deployer
        self._channel = channel
        self._coordinator = coordinator
        self._status_view = status_view
        self._operator_coordinators = operator_coordinators
        self._canceled = canceled
        self._listeners = tuple(listeners)
        self.current: Attempt | None = None
        self.restores: list[RestoreStats] = []
        self.recovery_times = RecoveryTimes()
        self._submitted: SubmittedAttempt = _NothingSubmitted()
        self._next_tick = 0.0
        # What a slot or task of the running attempt may send; a new message is one line.
        self._handlers: dict[type, Callable[[Attempt, Any], None]] = {
            msg.SlotRegistered: self._on_slot_registered,
            msg.SlotHeartbeat: self._on_slot_heartbeat,
            msg.SlotStopped: self._on_slot_stopped,
            msg.CollectedRecords: self._on_collected_records,
            msg.TaskRunning: self._on_task_running,
            msg.AcknowledgeCheckpoint: lambda _, m: self._coordinator.on_acknowledge(m),
            msg.DeclineCheckpoint: lambda _, m: self._coordinator.on_decline(m),
            msg.EndOfInput: self._on_end_of_input,
            msg.TaskFinished: self._on_task_finished,
            msg.TaskFailed: lambda a, m: a.fail(
                m.error,
                m.traceback,
                corrupt_checkpoint_file=m.corrupt_checkpoint_file,
                signature=m.signature,
            ),
            msg.OperatorEventToCoordinator: lambda _, m: operator_coordinators.handle_event(m),
        }
        # While an attempt stops: only which of its slots stopped or still live.
        self._stopping_handlers: dict[type, Callable[[Attempt, Any], None]] = {
            msg.SlotRegistered: self._on_slot_registered_while_stopping,
            msg.SlotHeartbeat: self._on_slot_heartbeat_while_stopping,
            msg.SlotStopped: self._on_slot_stopped,
        }

    def fail(self, error: str, trace: str = "", recoverable: bool = True) -> None:
        """Fails the running attempt (its first failure is the one that counts)."""
        if self.current is not None:
            self.current.fail(error, trace, recoverable)

    def checkpoint_due_now(self) -> None:
        """The next supervision turn asks the checkpoint coordinator at once."""
        self._next_tick = time.monotonic()

    # --- start ----------------------------------------------------------------------------------

    def start(
        self, number: int, restore: CheckpointMetadata | None, restore_uri: str | None
    ) -> Attempt:
        """Submits attempt ``number``, restoring ``restore`` (None: a fresh start) whose paths
        are relative to ``restore_uri``. An operator coordinator that fails to restore fails
        the attempt before anything is submitted."""
        plan = self._plan
        graph = plan.graph
        token = random.getrandbits(63)
        assignment = None
        if restore is not None:
            assignment = assign_state(restore, graph, plan.allow_non_restored_state)
            left_behind = map_state(restore, graph.job_graph).of_fate(OperatorFate.LEFT_BEHIND)
            snapshot = "savepoint" if restore.is_savepoint else "checkpoint"
            if left_behind:
                log.warning(
                    "State of operators %s in %s %d is not restored: the job has no such "
                    "operators (allowed by --allow-non-restored-state)",
                    left_behind,
                    snapshot,
                    restore.checkpoint_id,
                )
            log.info("Attempt %d restores %s %d", number, snapshot, restore.checkpoint_id)
        slots = slot_descriptors(
            plan, number, token, self._channel.endpoint, restore_uri, assignment
        )
        attempt = Attempt(number, token, frozenset(s.id for s in graph.subtasks), len(slots))
        attempt.restored_checkpoint = restore.checkpoint_id if restore is not None else None
        self.current = attempt
        self._channel.attempt = number
        self._status_view.attempt_started(number, sorted(attempt.tasks))
        self._coordinator.start_attempt(attempt.tasks, graph.source_subtasks)
        self._submitted = _NothingSubmitted()
        try:
            self._operator_coordinators.restore(restore)
        except OperatorCoordinatorFailed as e:
            attempt.fail(str(e), _trace(e))
            return attempt
        log.info("Job %s (%s) attempt %d: %d slots", plan.job_name, plan.job_id, number, len(slots))
        self.recovery_times.attempt_submitted(number, attempt.restored_checkpoint, time.time())

        def on_done(error: BaseException | None) -> None:
            self._channel.mailbox.put(lambda: self._on_deployment_done(attempt, error))

        self._submitted = self._deployer.submit(slots, f"{plan.job_name} attempt {number}", on_done)
        return attempt

    # --- supervise ------------------------------------------------------------------------------

    def supervise(self, attempt: Attempt) -> None:
        """Until the attempt finished (every task, and its deployment), failed, or the job was
        canceled."""
        poller = self._channel.poller()
        self._next_tick = time.monotonic()
        next_heartbeat = time.monotonic()
        while attempt.failure is None and not self._canceled():
            if attempt.spark_done and attempt.all_finished:
                return
            now = time.monotonic()
            # Trigger only once every task runs: a trigger to a task not yet connected is lost.
            if attempt.all_running and now >= self._next_tick:
                try:
                    self._next_tick = self._coordinator.tick()
                except CheckpointFailuresExceeded as e:
                    attempt.fail(str(e))
                    return
                except OperatorCoordinatorFailed as e:
                    attempt.fail(str(e), _trace(e))
                    return
            if now >= next_heartbeat:
                self._heartbeat(attempt, now)
                next_heartbeat = now + HEARTBEAT_EVERY_S
            next_timer = self._operator_coordinators.run_timers()
            wake = min(self._next_tick, next_heartbeat)
            if next_timer is not None:
                wake = min(wake, next_timer)
            timeout_ms = max(1, int((wake - time.monotonic()) * 1000))
            poller.poll(min(timeout_ms, 500))
            self._drain(attempt)

    def _drain(self, attempt: Attempt) -> None:
        for identity, message in self._channel.incoming():
            if message.attempt != attempt.number:
                if message.attempt < attempt.number:
                    self._channel.send(identity, msg.CancelAttempt(message.attempt, "superseded"))
                continue
            handler = self._handlers.get(type(message))
            if handler is None:
                continue  # not a message slots or tasks send
            try:
                handler(attempt, message)
            except CheckpointFailuresExceeded as e:
                attempt.fail(str(e))

    def _on_slot_registered(self, attempt: Attempt, message: msg.SlotRegistered) -> None:
        # Silence counts from the first heartbeat: before it, the slot may wait for slower
        # slots to start and register.
        gates = attempt.slot_registered(message.slot, message.host, message.pid, message.gates)
        if gates is not None:  # the last slot: every slot may now connect and start
            endpoints = msg.GateEndpoints(attempt.number, gates)
            for slot in attempt.slots:
                self._channel.send(msg.slot_identity(attempt.number, slot), endpoints)

    def _on_slot_heartbeat(self, attempt: Attempt, message: msg.SlotHeartbeat) -> None:
        attempt.slot_last_seen[message.slot] = time.monotonic()
        if message.tasks:
            self._status_view.subtask_metrics(message.tasks)
            self.recovery_times.subtasks_sampled(attempt.number, message.tasks)
        first = self.recovery_times.first_record_at(attempt.number)
        for listener in self._listeners:
            listener.attempt_sampled(attempt.number, first, time.time())

    def _on_slot_stopped(self, attempt: Attempt, message: msg.SlotStopped) -> None:
        attempt.stopped_slots.add(message.slot)

    def _on_collected_records(self, attempt: Attempt, message: msg.CollectedRecords) -> None:
        if message.token == attempt.token:  # else not from this attempt's tasks: never unpickled
            collected_records.deliver(message)
        else:
            log.warning("Dropped collected records with a wrong token (%s)", message.collector)

    def _on_task_running(self, attempt: Attempt, message: msg.TaskRunning) -> None:
        task = (message.vertex, message.subtask)
        now = time.monotonic()
        all_running = attempt.task_running(
            task, message.restore_bytes_read, message.restore_ms, now
        )
        self._status_view.task_state_changed(task, TaskState.RUNNING)
        self._operator_coordinators.subtask_running(task)
        if all_running:
            if attempt.restored_checkpoint is not None:
                self._restored(attempt)
            self._coordinator.all_tasks_running()
            for listener in self._listeners:
                listener.attempt_running(attempt.number, time.time())

    def _restored(self, attempt: Attempt) -> None:
        """Records which checkpoint the attempt restored, from where, and what it took."""
        assert attempt.restored_checkpoint is not None  # asked only when it restored one
        own = self._coordinator.store.latest() is not None
        restore = self._plan.restore_from
        self._status_view.checkpoint_restored(
            attempt.restored_checkpoint,
            is_savepoint=not own and restore is not None and restore.is_savepoint,
            external_path=None if own else self._plan.restore_root_uri,
        )
        self.restores.append(
            RestoreStats(
                attempt.number,
                attempt.restored_checkpoint,
                attempt.restore_bytes_read,
                attempt.max_restore_ms,
            )
        )
        log.info(
            "Attempt %d restored checkpoint %d in %.0f ms, reading %d bytes from checkpoint "
            "storage",
            attempt.number,
            attempt.restored_checkpoint,
            attempt.max_restore_ms,
            attempt.restore_bytes_read,
        )

    def _on_end_of_input(self, attempt: Attempt, message: msg.EndOfInput) -> None:
        attempt.ended_inputs.add((message.vertex, message.subtask))
        self._coordinator.source_ended()
        if set(self._plan.graph.source_subtasks) <= attempt.ended_inputs:
            self._coordinator.sources_finished()
            self.checkpoint_due_now()  # the final checkpoint is due at once

    def _on_task_finished(self, attempt: Attempt, message: msg.TaskFinished) -> None:
        attempt.task_finished((message.vertex, message.subtask), time.monotonic())
        self._status_view.task_state_changed((message.vertex, message.subtask), TaskState.FINISHED)

    def _on_deployment_done(self, attempt: Attempt, error: BaseException | None) -> None:
        attempt.spark_done = True
        if error is not None:
            missing = None if attempt.slots else _unloadable_code(error)
            if missing is not None:  # no slot started: the executors cannot load the job
                attempt.fail(
                    f"the executors cannot load the job's code ({missing}): make the modules "
                    "the job's functions come from importable there (spark-submit --py-files, "
                    "or install them into the executors' Python); not restarted, since every "
                    "attempt would fail the same way",
                    recoverable=False,
                )
            else:
                attempt.fail(
                    f"the Spark job of attempt {attempt.number} failed: {_first_line(error)}"
                )
        elif not attempt.all_finished:
            attempt.fail("the Spark job ended before all subtasks finished")

    def _heartbeat(self, attempt: Attempt, now: float) -> None:
        beat = msg.Heartbeat(attempt.number)
        for slot in attempt.slots:
            self._channel.send(msg.slot_identity(attempt.number, slot), beat)
        timeout = self._plan.heartbeat_timeout_s
        for slot in attempt.silent_slots(now, timeout):
            attempt.fail(f"slot {slot} sent no heartbeat for {timeout:g} s")
        for listener in self._listeners:
            listener.attempt_supervised(attempt.number, now)

    # --- stop -----------------------------------------------------------------------------------

    def stop(self, attempt: Attempt, job_ended: bool) -> None:
        """Makes sure no subtask of ``attempt`` runs any more, then ends its deployment.
        ``job_ended``: no attempt follows, so the slots remove their local state."""
        self._coordinator.abort_all(f"attempt {attempt.number} is stopping")
        self._operator_coordinators.attempt_ended()
        cancel = msg.CancelAttempt(
            attempt.number, "the attempt failed or was canceled", job_ended=job_ended
        )
        for slot in attempt.slots:
            self._channel.send(msg.slot_identity(attempt.number, slot), cancel)
        for vertex, subtask in attempt.tasks:
            self._channel.send(msg.task_identity(attempt.number, vertex, subtask), cancel)
        deadline = time.monotonic() + self._plan.heartbeat_timeout_s + 10
        while time.monotonic() < deadline:
            running = [s for s in attempt.slots if not self._slot_gone(attempt, s)]
            if not running:
                break
            self._channel.router.poll(100)
            self._drain_stopping(attempt)
        else:
            log.error(
                "Slots %s of attempt %d did not confirm that they stopped", running, attempt.number
            )
        self._submitted.cancel()
        if not self._submitted.join(30):
            log.error("The Spark job of attempt %d did not end within 30 s", attempt.number)

    def _slot_gone(self, attempt: Attempt, slot: int) -> bool:
        if slot in attempt.stopped_slots:
            return True
        host, pid = attempt.slots[slot]
        if host == socket.gethostname():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        silent = time.monotonic() - attempt.slot_last_seen.get(slot, 0)
        return silent > self._plan.heartbeat_timeout_s + 1

    def _drain_stopping(self, attempt: Attempt) -> None:
        for _identity, message in self._channel.incoming():
            handler = self._stopping_handlers.get(type(message))
            if message.attempt == attempt.number and handler is not None:
                handler(attempt, message)

    def _on_slot_heartbeat_while_stopping(
        self, attempt: Attempt, message: msg.SlotHeartbeat
    ) -> None:
        attempt.slot_last_seen[message.slot] = time.monotonic()

    def _on_slot_registered_while_stopping(
        self, attempt: Attempt, message: msg.SlotRegistered
    ) -> None:
        attempt.slots[message.slot] = (message.host, message.pid)
        attempt.slot_last_seen[message.slot] = time.monotonic()
        self._channel.send(
            msg.slot_identity(message.attempt, message.slot),
            msg.CancelAttempt(message.attempt, "stopping"),
        )

    def stop_for_rescale(self, why: str) -> None:
        """Ends the running attempt to rescale the job: ``supervise`` returns, and the
        JobMaster starts the next attempt at the new parallelism (no restart is counted)."""
        if self.current is not None:
            self.current.fail(why, for_rescale=True)

    def wait(self, delay_s: float) -> None:
        """Sleeps before a restart, still answering requests (a cancel ends the wait). A delay
        long enough has the deployer start the next attempt's workers meanwhile, if it can
        (Spark: Python workers with the task runtime imported, which the attempt reuses)."""
        prepare = getattr(self._deployer, "prepare", None)
        if prepare is not None and delay_s >= PREPARE_WITHIN_DELAY_S:
            prepare(self._plan.graph.num_slots)
        deadline = time.monotonic() + delay_s
        while not self._canceled() and time.monotonic() < deadline:
            self._channel.router.poll(max(1, min(100, int((deadline - time.monotonic()) * 1000))))
            for _ in self._channel.incoming():
                pass  # messages of the failed attempt; requests were answered


def _trace(error: BaseException) -> str:
    cause = error.__cause__ or error
    return "".join(traceback.format_exception(cause))


_UNLOADABLE = re.compile(
    r"(ModuleNotFoundError: No module named [^\n]+|AttributeError: Can't get attribute [^\n]+)"
)


def _unloadable_code(error: BaseException) -> str | None:
    """The error by which a Python worker could not unpickle the slots' code, if that is why
    the Spark job failed."""
    found = _UNLOADABLE.search(str(error))
    return found.group(1).strip() if found else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    for marker in ("SlotFailure:", "UserFunctionError:"):
        if marker in text:
            return text[text.index(marker) :].splitlines()[0]
    return text.splitlines()[0] if text else type(error).__name__
