"""One operator's coordinator (a split enumerator, a global committer) in the test's process,
playing the JobMaster for ``OperatorHarness``: events both ways wait in queues and are handed
over, in order, when the harness pumps them; periodic work runs on the harness's calls.

The JobMaster's ordering is kept: the coordinator's snapshot of checkpoint N is taken before
any subtask's, and an event it sends after that reaches a subtask only after the subtask's own
snapshot of N (as a trigger overtakes nothing on the control channel). A test must therefore
snapshot every open subtask of a checkpoint before it reads more from them.

**Threading:** the test's thread; discoveries run at once, on it.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

from barrierflow.cluster.coordinators.creation import create_coordinator
from barrierflow.control.operator_coordinator import OperatorCoordinatorContext
from barrierflow.runtime.operators import OperatorSpec


class RunNow(Executor):
    """Runs each submitted function at once, on the caller's thread."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - kept in the future, as a pool would
            future.set_exception(e)
        return future


@dataclass
class _Periodic:
    interval_s: float
    fn: Callable[[], None]
    due_s: float = 0.0


@dataclass
class _Checkpoint:
    """A coordinator snapshot, and the subtasks that have not taken theirs of it yet."""

    state: bytes
    cut: int  # events numbered from here on were sent after the snapshot
    waiting: set[int] = field(default_factory=set)


class LocalCoordinatorHost(OperatorCoordinatorContext):
    """``spec``'s coordinator, if its function gets one (``cluster/coordinators/creation.py``):
    a source's discoveries run at once, on the test's thread."""

    def __init__(
        self,
        spec: OperatorSpec,
        parallelism: int,
        restore: tuple[int, bytes | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``restore``: (checkpoint id, the coordinator's state in it); None: a fresh start."""
        self._spec = spec
        self._parallelism = parallelism
        self._clock = clock
        self._numbers = itertools.count()
        self._to_subtasks: dict[int, deque[tuple[int, bytes]]] = {}
        self._to_coordinator: deque[tuple[int, bytes]] = deque()
        self._receivers: dict[int, Callable[[bytes], None]] = {}
        self._soon: deque[Callable[[], None]] = deque()
        self._periodic: list[_Periodic] = []
        self._checkpoints: dict[int, _Checkpoint] = {}
        self._completed: set[int] = set()
        self._failure: BaseException | None = None
        self.coordinator = create_coordinator(spec.function, self, RunNow(), self._clock)
        if self.coordinator is not None:
            self.coordinator.restore_state(*(restore or (None, None)))
            self.coordinator.start()

    # --- OperatorCoordinatorContext -----------------------------------------------------------

    @property
    def operator_uid(self) -> str:
        return self._spec.uid

    @property
    def operator_name(self) -> str:
        return self._spec.name

    @property
    def parallelism(self) -> int:
        return self._parallelism

    def send_event(self, subtask: int, payload: bytes) -> None:
        if subtask in self._receivers:  # an event for a closed subtask is lost, as on a failure
            self._to_subtasks[subtask].append((next(self._numbers), payload))

    def call_periodically(self, interval_s: float, fn: Callable[[], None]) -> None:
        self._periodic.append(_Periodic(interval_s, fn, self._clock()))

    def call_soon(self, fn: Callable[[], None]) -> None:
        self._soon.append(fn)

    def fail_job(self, error: BaseException) -> None:
        self._failure = error

    # --- the subtasks' side -------------------------------------------------------------------

    def attach(self, subtask: int, receive: Callable[[bytes], None]) -> Callable[[bytes], None]:
        """Subtask ``subtask`` opens with ``receive`` for its events; returns how it sends."""
        self._receivers[subtask] = receive
        self._to_subtasks[subtask] = deque()

        def send(payload: bytes) -> None:
            self._to_coordinator.append((subtask, payload))

        return send

    def ready(self, subtask: int) -> None:
        """The subtask runs (as its task reports to the JobMaster)."""
        if self.coordinator is not None:
            self.coordinator.subtask_ready(subtask)
        self.pump(to_subtasks=False)

    def detach(self, subtask: int) -> None:
        self._receivers.pop(subtask, None)
        self._to_subtasks.pop(subtask, None)
        for checkpoint in self._checkpoints.values():
            checkpoint.waiting.discard(subtask)
        if not self._receivers and self.coordinator is not None:
            self.coordinator.close()
            self.coordinator = None

    # --- the JobMaster's side -----------------------------------------------------------------

    def pump(self, to_subtasks: bool = True) -> None:
        """Hands over what is due until nothing is (to the subtasks only where ``to_subtasks``,
        and nothing a subtask may not see before its next snapshot)."""
        while True:
            moved = self._run_coordinator_work()
            if to_subtasks:
                for subtask in list(self._receivers):
                    moved |= self._deliver(subtask, self._limit(subtask))
            if self._failure is not None:
                failure, self._failure = self._failure, None
                raise failure
            if not moved:
                return

    def run_periodic_work(self) -> None:
        """Runs every periodic callback now, as if their intervals had passed (the
        coordinator's own clock still decides, for instance, whether a discovery is due)."""
        for periodic in self._periodic:
            periodic.due_s = float("-inf")
        self.pump()

    def _run_coordinator_work(self) -> bool:
        moved = False
        while self._soon:
            self._soon.popleft()()
            moved = True
        now = self._clock()
        for periodic in list(self._periodic):
            if periodic.due_s <= now and self.coordinator is not None:
                periodic.due_s = now + periodic.interval_s
                periodic.fn()
        while self._to_coordinator:
            subtask, payload = self._to_coordinator.popleft()
            if self.coordinator is not None:
                self.coordinator.handle_event(subtask, payload)
            moved = True
        return moved

    def _limit(self, subtask: int) -> int | None:
        cuts = [c.cut for c in self._checkpoints.values() if subtask in c.waiting]
        return min(cuts) if cuts else None

    def _deliver(self, subtask: int, before: int | None) -> bool:
        queue = self._to_subtasks.get(subtask)
        moved = False
        while queue and (before is None or queue[0][0] < before):
            _, payload = queue.popleft()
            self._receivers[subtask](payload)
            moved = True
        return moved

    def before_snapshot(self, checkpoint_id: int, subtask: int) -> bytes | None:
        """Subtask ``subtask`` is about to snapshot ``checkpoint_id``: the first of the group
        makes the coordinator snapshot it; the subtask gets what was sent before that."""
        checkpoint = self._checkpoints.get(checkpoint_id)
        if checkpoint is None:
            self.pump()
            state = (
                self.coordinator.snapshot_state(checkpoint_id)
                if self.coordinator is not None
                else b""
            )
            checkpoint = self._checkpoints[checkpoint_id] = _Checkpoint(
                state, next(self._numbers), set(self._receivers)
            )
        self._deliver(subtask, checkpoint.cut)
        checkpoint.waiting.discard(subtask)
        return checkpoint.state if self.coordinator is not None else None

    def complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: the coordinator hears it once, after what
        the subtasks sent before their acknowledgements."""
        self.pump(to_subtasks=False)
        if checkpoint_id not in self._completed:
            self._completed.add(checkpoint_id)
            if self.coordinator is not None:
                self.coordinator.notify_checkpoint_complete(checkpoint_id)
            self.pump(to_subtasks=False)
