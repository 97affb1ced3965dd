"""What the JobMaster needs of the cluster that runs an attempt's slots.

``cluster/spark/deployment.py``'s ``SparkDeployer`` runs them as one Spark barrier stage;
``barrierflow/testing`` records them instead, so that the JobMaster is tested without Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from barrierflow.runtime.task_executor import SlotDescriptor


class SubmittedAttempt(Protocol):
    def cancel(self) -> None:
        """Asks the cluster to stop the attempt's slots; returns at once."""

    def join(self, timeout_s: float) -> bool:
        """Waits until the attempt ended on the cluster; False if it had not by the timeout."""


class Deployer(Protocol):
    def submit(
        self,
        slots: list[SlotDescriptor],
        description: str,
        on_done: Callable[[BaseException | None], None],
    ) -> SubmittedAttempt:
        """Starts every slot at once (they are gang-scheduled) and returns at once; calls
        ``on_done`` from another thread when the attempt ended, with its error if it failed."""

    def available_slots(self) -> int | None:
        """How many slots the cluster can run at once now (a rescale is refused beyond
        them); None when there is no such limit."""

    def request_slots(self, count: int) -> bool:
        """Asks the cluster for ``count`` more slots (Spark: executors), returning at once;
        False when the cluster cannot be asked (a local master)."""
