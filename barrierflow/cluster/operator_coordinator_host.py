"""The JobMaster's host of operator coordinators (``control/operator_coordinator.py``): one per
operator uid whose function needs one: a source (its split enumerator), a sink with a global
committer, or a ``CoordinatorProvider`` (``coordinators/creation.py`` decides).

It creates them when the job runs, routes their events both ways (``OperatorEventToTask`` to
a subtask of the running attempt, ``OperatorEventToCoordinator`` from one: the JobMaster's
fencing has already dropped those of other attempts), snapshots them when a checkpoint is
triggered and tells them of its end (``OperatorCoordinatorCheckpoints``), restores them before
each attempt from the checkpoint the attempt restores, and closes them when the job ends. Any
exception a coordinator raises is caught here and fails the running attempt, naming the
operator; the restart strategy decides what follows.

**Threading:** the JobMaster's thread; a context's ``call_soon`` from any thread (through the
JobMaster's mailbox). **I/O:** through the control channel. **Lifecycle:** ``create`` once,
then per attempt ``restore`` (which starts them the first time), ``subtask_running`` per
task, ``attempt_ended``; ``close`` once.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.cluster.control_channel import ControlChannel, TaskKey
from barrierflow.cluster.coordinators.creation import create_coordinator
from barrierflow.cluster.coordinators.source_coordinator import SourceCoordinator
from barrierflow.control import messages as msg
from barrierflow.control.operator_coordinator import (
    OperatorCoordinator,
    OperatorCoordinatorContext,
)
from barrierflow.coordination.operator_coordinator_checkpoints import OperatorCoordinatorFailed
from barrierflow.graph.job_graph import JobGraph

log = logging.getLogger("barrierflow.jobmaster")

# (error, traceback, recoverable): how the host fails the running attempt
FailAttempt = Callable[[str, str, bool], None]


@dataclass
class _Timer:
    interval_s: float
    fn: Callable[[], None]
    due_s: float


@dataclass
class _Hosted:
    """One operator's coordinator and what the host keeps for it."""

    uid: str
    name: str
    vertex: str
    parallelism: int
    coordinator: OperatorCoordinator | None = None
    started: bool = False
    held: dict[int, list[bytes]] = field(default_factory=dict)  # subtask -> events not yet sent
    timers: list[_Timer] = field(default_factory=list)

    def describe(self) -> str:
        return f"the coordinator of operator {self.uid!r} ({self.name})"


class OperatorCoordinatorHost:
    def __init__(
        self,
        job_graph: JobGraph,
        channel: ControlChannel,
        fail: FailAttempt,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``fail``: fails the running attempt; ``clock``: monotonic seconds (for timers)."""
        self._graph = job_graph
        self._channel = channel
        self._fail = fail
        self._hosted: dict[str, _Hosted] = {}
        self._ready: set[TaskKey] = set()  # the tasks of the running attempt that run
        self._thread: int | None = None  # the JobMaster's, once it runs the job
        self._clock = clock

    # --- lifecycle ------------------------------------------------------------------------------

    def create(self) -> None:
        """Creates the job's coordinators, on the thread that runs the job. A provider that
        raises fails the job: creation happens once per job, so no restart could help."""
        self._thread = threading.get_ident()
        for vertex in self._graph.vertices:
            for node in vertex.chain:
                hosted = _Hosted(node.uid, node.name, vertex.id, vertex.parallelism)
                try:
                    hosted.coordinator = create_coordinator(node.function, _Context(self, hosted))
                except Exception as e:
                    self.close()
                    raise OperatorCoordinatorFailed(
                        f"creating {hosted.describe()} failed: {type(e).__name__}: {e}"
                    ) from e
                if hosted.coordinator is not None:
                    self._hosted[node.uid] = hosted

    def enumerator_backlog(self, vertex: str) -> float | None:
        """What the split enumerators of ``vertex``'s sources hold that no reader was given
        (None: none tells)."""
        backlogs = [
            h.coordinator.backlog()
            for h in self._hosted.values()
            if h.vertex == vertex and isinstance(h.coordinator, SourceCoordinator)
        ]
        told = [b for b in backlogs if b is not None]
        return sum(told) if told else None

    def graph_changed(self, job_graph: JobGraph) -> None:
        """The job was rescaled: each coordinator's operator runs in another vertex, at another
        parallelism, from the next attempt on (which restores it, with the new parallelism)."""
        self._graph = job_graph
        for vertex in job_graph.vertices:
            for node in vertex.chain:
                hosted = self._hosted.get(node.uid)
                if hosted is not None:
                    hosted.vertex, hosted.parallelism = vertex.id, vertex.parallelism

    def restore(self, metadata: CheckpointMetadata | None) -> None:
        """Before an attempt's tasks start: every coordinator restores from ``metadata`` (None:
        a fresh start) and, the first time, starts. Raises ``OperatorCoordinatorFailed``."""
        self.attempt_ended()
        checkpoint_id = None if metadata is None else metadata.checkpoint_id
        for hosted in self._hosted.values():
            op = None if metadata is None else metadata.operator(hosted.uid)
            if op is not None and op.coordinator is None and op.subtasks:
                self._call_or_raise(hosted, "restore_from_earlier_version", checkpoint_id)
            else:
                state = None if op is None or op.coordinator is None else op.coordinator.data
                self._call_or_raise(hosted, "restore_state", checkpoint_id, state)
            if not hosted.started:
                self._call_or_raise(hosted, "start")
                hosted.started = True

    def attempt_ended(self) -> None:
        """No task of the attempt runs any more: events wait for the next attempt's tasks."""
        self._ready.clear()
        for hosted in self._hosted.values():
            hosted.held.clear()

    def close(self) -> None:
        """The job ended: every coordinator closes (an error is logged, nothing more fails)."""
        for hosted in self._hosted.values():
            if hosted.coordinator is not None:
                try:
                    hosted.coordinator.close()
                except Exception:
                    log.exception("Closing %s failed", hosted.describe())
        self._hosted.clear()

    # --- events ---------------------------------------------------------------------------------

    def subtask_running(self, task: TaskKey) -> None:
        """A task of the running attempt runs: its operators' coordinators send what they
        held for it, then hear that it is ready."""
        self._ready.add(task)
        vertex, subtask = task
        for hosted in self._hosted.values():
            if hosted.vertex == vertex:
                for payload in hosted.held.pop(subtask, []):
                    self._send(hosted, subtask, payload)
                self._call(hosted, "subtask_ready", subtask)

    def handle_event(self, event: msg.OperatorEventToCoordinator) -> None:
        hosted = self._hosted.get(event.operator_uid)
        if hosted is None or hosted.vertex != event.vertex:
            self._fail(
                f"subtask {event.vertex}[{event.subtask}] sent an event to the coordinator of "
                f"operator {event.operator_uid!r}, and that vertex has no such coordinator: "
                "its reader or writer and the coordinator its source or sink creates disagree "
                "on the operator (not restarted: every attempt would fail the same way)",
                "",
                False,
            )
            return
        self._call(hosted, "handle_event", event.subtask, event.payload)

    def send_event(self, hosted: _Hosted, subtask: int, payload: bytes) -> None:
        self._check_thread("send_event")
        if not 0 <= subtask < hosted.parallelism:
            raise ValueError(
                f"{hosted.describe()} sent an event to subtask {subtask}; the operator has "
                f"subtasks 0 to {hosted.parallelism - 1}"
            )
        if (hosted.vertex, subtask) in self._ready:
            self._send(hosted, subtask, bytes(payload))
        else:  # not running yet: a message now would be lost before it connects
            hosted.held.setdefault(subtask, []).append(bytes(payload))

    def _send(self, hosted: _Hosted, subtask: int, payload: bytes) -> None:
        assert self._channel.attempt is not None  # a subtask is running: an attempt started
        event = msg.OperatorEventToTask(
            self._channel.attempt, hosted.vertex, subtask, hosted.uid, payload
        )
        self._channel.send_to_task((hosted.vertex, subtask), event)

    # --- timers ---------------------------------------------------------------------------------

    def call_periodically(self, hosted: _Hosted, interval_s: float, fn: Callable[[], None]) -> None:
        self._check_thread("call_periodically")
        if interval_s <= 0:
            raise ValueError(f"{hosted.describe()}: call_periodically needs an interval > 0 s")
        hosted.timers.append(_Timer(interval_s, fn, self._clock() + interval_s))

    def call_soon(self, hosted: _Hosted, fn: Callable[[], None]) -> None:
        self._channel.mailbox.put(lambda: self._call_fn(hosted, "a call_soon callback", fn))

    def run_timers(self) -> float | None:
        """Runs the periodic calls that are due; returns when the next one is (None: none)."""
        now = self._clock()
        for hosted in list(self._hosted.values()):
            for timer in hosted.timers:
                if timer.due_s <= now:
                    timer.due_s = now + timer.interval_s
                    self._call_fn(hosted, "a periodic callback", timer.fn)
        dues = [t.due_s for h in self._hosted.values() for t in h.timers]
        return min(dues, default=None)

    # --- checkpoints (OperatorCoordinatorCheckpoints) ------------------------------------------

    def snapshot(self, checkpoint_id: int) -> dict[str, bytes]:
        states = {}
        for hosted in self._hosted.values():
            state = self._call_or_raise(hosted, "snapshot_state", checkpoint_id)
            if not isinstance(state, bytes | bytearray | memoryview):
                raise OperatorCoordinatorFailed(
                    f"{hosted.describe()} returned {type(state).__name__} from snapshot_state; "
                    "it must return bytes (encode the state, e.g. with msgspec)"
                )
            states[hosted.uid] = bytes(state)
        return states

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        for hosted in self._hosted.values():
            self._call(hosted, "notify_checkpoint_complete", checkpoint_id)

    def checkpoint_aborted(self, checkpoint_id: int) -> None:
        for hosted in self._hosted.values():
            self._call(hosted, "notify_checkpoint_aborted", checkpoint_id)

    # --- failures -------------------------------------------------------------------------------

    def fail_job(self, hosted: _Hosted, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        trace = "" if isinstance(error, str) else "".join(traceback.format_exception(error))
        self._fail(f"{hosted.describe()} failed the job: {text}", trace, True)

    def _call_or_raise(self, hosted: _Hosted, method: str, *args):
        try:
            return getattr(hosted.coordinator, method)(*args)
        except Exception as e:
            raise OperatorCoordinatorFailed(
                f"{hosted.describe()} failed in {method}: {type(e).__name__}: {e}"
            ) from e

    def _call(self, hosted: _Hosted, method: str, *args) -> None:
        self._call_fn(hosted, method, lambda: getattr(hosted.coordinator, method)(*args))

    def _call_fn(self, hosted: _Hosted, what: str, fn: Callable[[], None]) -> None:
        if hosted.uid not in self._hosted:  # closed meanwhile (a late call_soon)
            return
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - fails the attempt, naming the operator
            self._fail(
                f"{hosted.describe()} failed in {what}: {type(e).__name__}: {e}",
                "".join(traceback.format_exception(e)),
                True,
            )

    def _check_thread(self, method: str) -> None:
        if self._thread is not None and threading.get_ident() != self._thread:
            raise RuntimeError(
                f"{method} of an operator coordinator's context was called from another thread "
                "than the JobMaster's; hand the work back with context.call_soon(fn)"
            )


class _Context(OperatorCoordinatorContext):
    def __init__(self, host: OperatorCoordinatorHost, hosted: _Hosted) -> None:
        self._host = host
        self._hosted = hosted

    @property
    def operator_uid(self) -> str:
        return self._hosted.uid

    @property
    def operator_name(self) -> str:
        return self._hosted.name

    @property
    def parallelism(self) -> int:
        return self._hosted.parallelism

    def send_event(self, subtask: int, payload: bytes) -> None:
        self._host.send_event(self._hosted, subtask, payload)

    def call_periodically(self, interval_s: float, fn: Callable[[], None]) -> None:
        self._host.call_periodically(self._hosted, interval_s, fn)

    def call_soon(self, fn: Callable[[], None]) -> None:
        self._host.call_soon(self._hosted, fn)

    def fail_job(self, error: BaseException | str) -> None:
        self._host.fail_job(self._hosted, error)
