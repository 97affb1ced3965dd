"""Which checkpoint to trigger next, and when (Flink's CheckpointRequestDecider).

Three kinds of request:

- **periodic**: due one interval after the previous trigger (the first, one interval after every
  task of the attempt runs); it also waits for ``min_pause_s`` after the last completion (and
  then for no checkpoint to be pending at all) and for a place under ``max_concurrent``;
- **final**: once every source ended, each checkpoint is flagged final, and one is due at once
  (it skips the interval, not the min pause nor max concurrent); an aborted one makes the next
  due at once again; once one completed nothing more is triggered, since the tasks are ending.
  While only some sources ended, nothing is triggered unless ``checkpoints_after_tasks_finish``;
- **savepoint**: asked for by the user; due at once, in the order asked, past the interval, the
  min pause and max concurrent (as Flink's forced checkpoints).

Holds no clock (every call takes ``now_s``). Performs no I/O.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass

from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    FINAL_CHECKPOINT,
    CheckpointOptions,
)


class RequestKind(enum.Enum):
    PERIODIC = "periodic"
    FINAL = "final"
    SAVEPOINT = "savepoint"


@dataclass(frozen=True, slots=True)
class CheckpointRequest:
    kind: RequestKind
    options: CheckpointOptions
    target: str | None = None  # a savepoint's directory (None: the configured default)


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
    interval_s: float
    min_pause_s: float = 0.0
    max_concurrent: int = 1
    checkpoints_after_tasks_finish: bool = True


class CheckpointRequestDecider:
    def __init__(self, config: TriggerConfig) -> None:
        self._config = config
        self._savepoints: deque[CheckpointRequest] = deque()
        self._last_trigger_s: float | None = None
        self._last_completion_s: float | None = None
        self._some_source_ended = False
        self._sources_finished = False
        self._final_due = False
        self._final_completed = False

    # --- facts ----------------------------------------------------------------------------------

    def attempt_started(self) -> None:
        """A new attempt runs the sources from their restored positions again."""
        self._some_source_ended = False
        self._sources_finished = False
        self._final_due = False
        self._final_completed = False

    def all_tasks_running(self, now_s: float) -> None:
        """Every task of the attempt runs: the first periodic checkpoint is one interval away
        (a trigger sent earlier could reach a task not yet connected)."""
        self._last_trigger_s = now_s

    def source_ended(self) -> None:
        """One source subtask read all of its input."""
        self._some_source_ended = True

    def sources_finished(self) -> None:
        """Every source subtask read all of its input: a final checkpoint is due."""
        self._some_source_ended = True
        self._sources_finished = True
        self._final_due = True

    def request_savepoint(self, request: CheckpointRequest) -> None:
        if request.kind is not RequestKind.SAVEPOINT:
            raise ValueError(f"request_savepoint takes savepoint requests, got {request.kind}")
        self._savepoints.append(request)

    def triggered(self, request: CheckpointRequest, now_s: float) -> None:
        """``request``, as ``decide`` returned it, was triggered."""
        self._last_trigger_s = now_s
        if request.kind is RequestKind.SAVEPOINT:
            self._savepoints.remove(request)
        elif request.kind is RequestKind.FINAL:
            self._final_due = False

    def completed(self, options: CheckpointOptions, now_s: float) -> None:
        self._last_completion_s = now_s
        if options.is_final:
            self._final_completed = True

    def aborted(self) -> None:
        if self._sources_finished:
            self._final_due = True  # the job cannot end before a final checkpoint completes

    # --- the decision ---------------------------------------------------------------------------

    def decide(self, now_s: float, num_pending: int) -> TriggerDecision:
        if self._final_completed:
            return WaitForEvent("the final checkpoint completed: the tasks are ending")
        if self._savepoints:
            return TriggerNow(self._savepoints[0])
        config = self._config
        if (
            not config.checkpoints_after_tasks_finish
            and self._some_source_ended
            and not self._sources_finished
        ):
            return WaitForEvent("some sources ended (checkpoints-after-tasks-finish is off)")
        if num_pending >= config.max_concurrent:
            return WaitForEvent(f"{num_pending} checkpoint(s) pending, the most allowed")
        deadline = now_s
        if self._last_trigger_s is not None and not self._final_due:
            deadline = max(deadline, self._last_trigger_s + config.interval_s)
        if config.min_pause_s > 0:
            if num_pending > 0:
                return WaitForEvent("with a min pause, one checkpoint at a time")
            if self._last_completion_s is not None:
                deadline = max(deadline, self._last_completion_s + config.min_pause_s)
        if deadline > now_s:
            return WaitUntil(deadline)
        return TriggerNow(FINAL if self._sources_finished else PERIODIC)
