"""One attempt of a job, as the JobMaster sees it: which of its slots and tasks registered,
run, finished or fell silent, and why it failed. Bookkeeping only: the JobMaster's
``AttemptSupervisor`` feeds it and acts on what it says. Holds no clock (calls take ``now``).
Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from barrierflow.control.messages import FailureSignature

TaskKey = tuple[str, int]  # (vertex id, subtask index)


@dataclass(frozen=True)
class AttemptFailure:
    error: str
    traceback: str = ""
    recoverable: bool = True  # False: a restart would fail the same way (no restart is tried)
    corrupt_checkpoint_file: str | None = None  # the restore met it: the checkpoint is unusable
    signature: FailureSignature | None = None  # the user's function failed on a known record
    for_rescale: bool = False  # not a failure: the JobMaster stopped it to rescale the job


@dataclass
class Attempt:
    number: int
    token: int  # the data token of its tasks: what they send the driver is checked against it
    tasks: frozenset[TaskKey]
    num_slots: int = 1
    slots: dict[int, tuple[str, int]] = field(default_factory=dict)  # slot -> (host, pid)
    gates: dict[str, str] = field(default_factory=dict)  # "vertex/subtask" -> TCP endpoint
    slot_last_seen: dict[int, float] = field(default_factory=dict)
    stopped_slots: set[int] = field(default_factory=set)
    running_tasks: set[TaskKey] = field(default_factory=set)
    finished_tasks: set[TaskKey] = field(default_factory=set)
    ended_inputs: set[TaskKey] = field(default_factory=set)
    restored_checkpoint: int | None = None
    restore_bytes_read: int = 0
    max_restore_ms: float = 0.0
    all_running_at: float | None = None
    all_finished_at: float | None = None
    spark_done: bool = False
    failure: AttemptFailure | None = None

    def fail(
        self,
        error: str,
        traceback: str = "",
        recoverable: bool = True,
        corrupt_checkpoint_file: str | None = None,
        signature: FailureSignature | None = None,
        for_rescale: bool = False,
    ) -> None:
        """Records why the attempt failed (or, ``for_rescale``, was stopped to rescale the
        job); the first reason stays (later ones follow from it)."""
        if self.failure is None:
            self.failure = AttemptFailure(
                error, traceback, recoverable, corrupt_checkpoint_file, signature, for_rescale
            )

    def slot_registered(
        self, slot: int, host: str, pid: int, gates: dict[str, str]
    ) -> dict[str, str] | None:
        """Records a slot and the endpoints of its input gates; returns every gate's endpoint
        once the last slot registered (each slot waits for them before it starts a subtask),
        else None. A slot that registers again changes nothing."""
        if slot in self.slots:
            return None
        self.slots[slot] = (host, pid)
        self.gates.update(gates)
        return dict(self.gates) if len(self.slots) == self.num_slots else None

    @property
    def all_running(self) -> bool:
        return self.running_tasks == self.tasks

    @property
    def all_finished(self) -> bool:
        return self.finished_tasks == self.tasks

    def task_running(
        self, task: TaskKey, restore_bytes_read: int, restore_ms: float, now: float
    ) -> bool:
        """Returns whether it was the last of the attempt's tasks to run."""
        self.running_tasks.add(task)
        self.restore_bytes_read += restore_bytes_read
        self.max_restore_ms = max(self.max_restore_ms, restore_ms)
        if self.all_running:
            self.all_running_at = now
        return self.all_running

    def task_finished(self, task: TaskKey, now: float) -> None:
        self.finished_tasks.add(task)
        if self.all_finished:
            self.all_finished_at = now

    def silent_slots(self, now: float, timeout_s: float) -> list[int]:
        """The slots that beat once and then fell silent for longer than ``timeout_s``, and
        did not say they stopped. (Silence counts from the first heartbeat: before it, a slot
        may wait for slower slots to start and register.)"""
        return [
            slot
            for slot, seen in self.slot_last_seen.items()
            if now - seen > timeout_s and slot not in self.stopped_slots
        ]

    def processing_ms(self) -> int:
        """From the moment every task ran to the moment every task finished."""
        if self.all_running_at and self.all_finished_at:
            return int((self.all_finished_at - self.all_running_at) * 1000)
        return 0
