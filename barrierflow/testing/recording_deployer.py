"""A ``Deployer`` that runs nothing: it records each attempt's slots, and the test plays them
(through ``InMemoryJobMasterNetwork``) and ends them.

**Threading:** ``submit`` on the JobMaster's thread; the rest on the test's thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from barrierflow.runtime.task_executor import SlotDescriptor


class DeployedAttempt:
    def __init__(
        self,
        slots: list[SlotDescriptor],
        description: str,
        on_done: Callable[[BaseException | None], None],
    ) -> None:
        self.slots = slots
        self.description = description
        self._on_done = on_done
        self.canceled = False
        self.ended = False

    @property
    def number(self) -> int:
        return self.slots[0].attempt

    @property
    def tasks(self) -> list[tuple[str, int]]:
        return [(d.vertex, d.subtask) for slot in self.slots for d in slot.tasks]

    def end(self, error: BaseException | None = None) -> None:
        """The attempt ended on the cluster (as a Spark job ends)."""
        if not self.ended:
            self.ended = True
            self._on_done(error)

    # --- SubmittedAttempt -----------------------------------------------------------------------

    def cancel(self) -> None:
        self.canceled = True
        self.end(RuntimeError(f"{self.description} was canceled"))

    def join(self, timeout_s: float) -> bool:
        return self.ended


class RecordingDeployer:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self.attempts: list[DeployedAttempt] = []

    def available_slots(self) -> int | None:
        return None  # threads: no limit

    def request_slots(self, count: int) -> bool:
        return False

    def submit(
        self,
        slots: list[SlotDescriptor],
        description: str,
        on_done: Callable[[BaseException | None], None],
    ) -> DeployedAttempt:
        attempt = DeployedAttempt(slots, description, on_done)
        with self._condition:
            self.attempts.append(attempt)
            self._condition.notify_all()
        return attempt

    def wait_for_attempt(self, number: int, timeout_s: float = 10.0) -> DeployedAttempt:
        deadline = time.monotonic() + timeout_s
        with self._condition:
            while len(self.attempts) < number:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"attempt {number} was not submitted in {timeout_s} s")
                self._condition.wait(remaining)
            return self.attempts[number - 1]
