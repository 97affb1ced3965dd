"""Reactive mode's decisions (``scheduler-mode: reactive``, Flink's): the job's parallelism
follows the task slots the cluster gives it, up to its max parallelism.

- Before each attempt (the first, and every restart): the parallelism of the slots offered
  then. A restart after an executor was lost goes on at what is left, instead of waiting for
  slots that may never come back; with no slot at all it waits for one.
- While the job runs: when more slots are offered than it uses, it scales up, once the offer
  held for the stabilization time (``jobmanager.adaptive-scheduler.resource-stabilization-
  timeout``): executors register one by one, and one rescale for all of them costs less than
  one each. An offer that changes starts the time over.

Fewer slots while the job runs need no decision here: a barrier stage that lost a slot's
executor fails, and its restart asks ``parallelism_for``. Performs no I/O.
"""

from __future__ import annotations


class ReactiveMode:
    def __init__(self, stabilization_s: float, max_parallelism: int) -> None:
        self.stabilization_s = stabilization_s
        self._max_parallelism = max_parallelism
        self._offer: int | None = None  # a larger offer than the job uses, and since when
        self._offered_since = 0.0

    def parallelism_for(self, offered: int) -> int | None:
        """The parallelism an attempt starts at with ``offered`` slots; None: no slot, wait."""
        if offered < 1:
            return None
        return min(offered, self._max_parallelism)

    def scale_up_to(self, offered: int, using: int, now: float) -> int | None:
        """While the job runs on ``using`` slots and ``offered`` are there (``now``: seconds,
        monotonic): the parallelism to scale up to now, if the time has come."""
        target = self.parallelism_for(offered)
        if target is None or target <= using:
            self._offer = None
            return None
        if offered != self._offer:
            self._offer, self._offered_since = offered, now
            return None
        if now - self._offered_since < self.stabilization_s:
            return None
        self._offered_since = now  # refused or failed: asked again a stabilization time later
        return target
