"""Which checkpoint to trigger next, and when (Flink's CheckpointRequestDecider).

Three kinds of request:

- **periodic**: due one interval after the previous trigger (the first, one interval after every
  task of the attempt runs); it also waits for ``min_pause_s`` after the last completion (and
  then for no checkpoint to be pending at all) and for a place under ``max_concurrent``. With
  checkpointing off (no interval) there are none;
- **final**: once every source ended, each checkpoint is flagged final, and one is due at once
  (it skips the interval, not the min pause nor max concurrent); an aborted one makes the next
  due at once again. While only some sources ended, nothing is triggered unless
  ``checkpoints_after_tasks_finish``;
- **now**: a periodic checkpoint asked for at once (a rescale checkpoints before it stops
  the job, to replay little: FLIP-461's "trigger actively"); it skips the interval and the min
  pause, not max concurrent (a checkpoint already pending serves as well when it completes);
- **savepoint**: asked for by the user; due at once, in the order asked, past the interval, the
  min pause and max concurrent (as Flink's forced checkpoints), but one at a time, and nothing
  else is triggered while one is pending: a newer barrier would subsume its alignment at the
  tasks. A *terminate* savepoint (stop --drain) waits until the sources ended and is the final
  snapshot; if it fails, a final checkpoint follows, since the tasks wait for one.

Once a final snapshot or a *suspend* savepoint (stop) completed, nothing more is triggered: the
tasks are ending. Holds no clock (every call takes ``now_s``). Performs no I/O.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    FINAL_CHECKPOINT,
    CheckpointKind,
    CheckpointOptions,
)


class RequestKind(enum.Enum):
    PERIODIC = "periodic"
    FINAL = "final"
    SAVEPOINT = "savepoint"


@dataclass(frozen=True, slots=True, eq=False)
class CheckpointRequest:
    """A request to trigger; savepoint requests are distinct objects even when alike."""

    kind: RequestKind
    options: CheckpointOptions


PERIODIC = CheckpointRequest(RequestKind.PERIODIC, CHECKPOINT)
FINAL = CheckpointRequest(RequestKind.FINAL, FINAL_CHECKPOINT)


@dataclass(frozen=True, slots=True)
class TriggerNow:
    request: CheckpointRequest


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Nothing is due before ``deadline_s`` (same clock as ``now_s``)."""

    deadline_s: float


@dataclass(frozen=True, slots=True)
class WaitForEvent:
    """Nothing is due before something happens: a pending checkpoint ends, a source ends, a
    savepoint is asked for."""

    reason: str


TriggerDecision = TriggerNow | WaitUntil | WaitForEvent


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    interval_s: float | None  # None: checkpointing is off; savepoints only
    min_pause_s: float = 0.0
    max_concurrent: int = 1
    checkpoints_after_tasks_finish: bool = True
    checkpoint_options: CheckpointOptions = CHECKPOINT  # of periodic checkpoints


class CheckpointRequestDecider:
    def __init__(self, config: TriggerConfig) -> None:
        self._config = config
        self._periodic = (
            PERIODIC
            if config.checkpoint_options is CHECKPOINT
            else CheckpointRequest(RequestKind.PERIODIC, config.checkpoint_options)
        )
        self._savepoints: deque[CheckpointRequest] = deque()
        self._savepoint_pending = False
        self._last_trigger_s: float | None = None
        self._last_completion_s: float | None = None
        self._some_source_ended = False
        self._sources_finished = False
        self._final_due = False
        self._drain_requested = False  # a terminate savepoint was asked for
        self._ending = False  # a final snapshot or a suspend savepoint completed
        self._now = False  # a checkpoint is asked for at once

    # --- facts ----------------------------------------------------------------------------------

    def attempt_started(self) -> None:
        """A new attempt runs the sources from their restored positions again; what a stop
        of the previous attempt asked for is void (its requester was told it failed)."""
        self._some_source_ended = False
        self._sources_finished = False
        self._final_due = False
        self._drain_requested = False
        self._ending = False
        self._savepoint_pending = False

    def all_tasks_running(self, now_s: float) -> None:
        """Every task of the attempt runs: the first periodic checkpoint is one interval away
        (a trigger sent earlier could reach a task not yet connected)."""
        self._last_trigger_s = now_s

    def source_ended(self) -> None:
        """One source subtask read all of its input."""
        self._some_source_ended = True

    def sources_finished(self) -> None:
        """Every source subtask read all of its input: a final snapshot is due."""
        self._some_source_ended = True
        self._sources_finished = True
        self._final_due = True

    def request_savepoint(self, request: CheckpointRequest) -> None:
        if request.kind is not RequestKind.SAVEPOINT:
            raise ValueError(f"request_savepoint takes savepoint requests, got {request.kind}")
        if request.options.kind is CheckpointKind.TERMINATE:
            self._drain_requested = True
        self._savepoints.append(request)

    def request_checkpoint_now(self) -> None:
        """A periodic checkpoint, due at once (past the interval and the min pause)."""
        self._now = True

    def withdraw(self, request: CheckpointRequest) -> bool:
        """Drops a savepoint request not yet triggered; False if it was not queued."""
        try:
            self._savepoints.remove(request)
        except ValueError:
            return False
        return True

    def queued_savepoints(self) -> list[CheckpointRequest]:
        return list(self._savepoints)

    def triggered(self, request: CheckpointRequest, now_s: float) -> None:
        """``request``, as ``decide`` returned it, was triggered."""
        self._last_trigger_s = now_s
        if request.kind is RequestKind.SAVEPOINT:
            self._savepoints.remove(request)
            self._savepoint_pending = True
        if request.options.is_final:
            self._final_due = False
        if request.kind is RequestKind.PERIODIC:
            self._now = False

    def completed(self, options: CheckpointOptions, now_s: float) -> None:
        if options.is_savepoint:
            self._savepoint_pending = False
        else:
            self._last_completion_s = now_s
        if options.ends_job:
            self._ending = True

    def aborted(self, options: CheckpointOptions) -> None:
        if options.is_savepoint:
            self._savepoint_pending = False
        if self._sources_finished:
            self._final_due = True  # the job cannot end before a final snapshot completes

    # --- the decision ---------------------------------------------------------------------------

    def decide(self, now_s: float, num_pending: int) -> TriggerDecision:
        if self._ending:
            return WaitForEvent("the job's last snapshot completed: the tasks are ending")
        if self._savepoint_pending:
            return WaitForEvent("a savepoint is pending")
        if self._savepoints:
            first = self._savepoints[0]
            if first.options.kind is not CheckpointKind.TERMINATE or self._sources_finished:
                return TriggerNow(first)
        config = self._config
        if config.interval_s is None and not (self._drain_requested and self._sources_finished):
            return WaitForEvent("checkpointing is off")
        if (
            not config.checkpoints_after_tasks_finish
            and self._some_source_ended
            and not self._sources_finished
        ):
            return WaitForEvent("some sources ended (checkpoints-after-tasks-finish is off)")
        if num_pending >= config.max_concurrent:
            return WaitForEvent(f"{num_pending} checkpoint(s) pending, the most allowed")
        if self._now and not self._final_due:
            return TriggerNow(self._periodic)
        deadline = now_s
        if self._last_trigger_s is not None and not self._final_due:
            deadline = max(deadline, self._last_trigger_s + (config.interval_s or 0.0))
        if config.min_pause_s > 0:
            if num_pending > 0:
                return WaitForEvent("with a min pause, one checkpoint at a time")
            if self._last_completion_s is not None:
                deadline = max(deadline, self._last_completion_s + config.min_pause_s)
        if deadline > now_s:
            return WaitUntil(deadline)
        return TriggerNow(FINAL if self._sources_finished else self._periodic)
