"""What the checkpoint coordinator asks of the operator coordinators on the JobMaster: their
state when it triggers a checkpoint, and word of its completion or abort.

The checkpoint coordinator takes every operator coordinator's state in the same step as it
sends the checkpoint's triggers (``snapshot`` right before the triggers, on the same thread),
keeps the states with the pending checkpoint, and writes them into ``_metadata`` as one
section per operator uid (``OperatorCoordinatorState``). It tells them of a completion or an
abort when it tells the tasks. Why in that step: ``docs/adr/0013-operator-coordinators.md``.
The JobMaster implements this (``cluster/operator_coordinator_host.py``); restoring the
coordinators before an attempt is the JobMaster's too, since it picks the checkpoint.

**Threading:** the JobMaster's thread only. Performs no I/O.
"""

from __future__ import annotations

from typing import Protocol


class OperatorCoordinatorFailed(Exception):
    """An operator coordinator raised, or failed the job on purpose; the message names the
    operator. The running attempt fails with it (the restart strategy decides what follows)."""


class OperatorCoordinatorCheckpoints(Protocol):
    def snapshot(self, checkpoint_id: int) -> dict[str, bytes]:
        """Every operator coordinator's state for ``checkpoint_id``, by operator uid. Raises
        ``OperatorCoordinatorFailed`` when one of them raised: then nothing is triggered."""

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """Called when the tasks are told; never raises (a failure fails the attempt)."""

    def checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Called when the tasks are told; never raises (a failure fails the attempt)."""


class NoOperatorCoordinators:
    """A job none of whose operators has a coordinator."""

    def snapshot(self, checkpoint_id: int) -> dict[str, bytes]:
        return {}

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def checkpoint_aborted(self, checkpoint_id: int) -> None:
        pass
