"""Reactive mode at work (``scheduler-mode: reactive``): asks the cluster for the slots it
offers and applies ``ReactiveMode``'s decisions. Before each attempt the JobMaster asks
``graph_to_start``: the job at the parallelism of the slots offered then (waiting while there
is none). While the job runs, it looks at the offer every second and asks the rescaler to scale
up once a larger offer held for the stabilization time.

The graph at a parallelism is the program's at that default parallelism; an operator the
program gave a larger parallelism of its own is brought down to it (a barrier stage needs a
slot per subtask of its widest operator).

**Threading:** the JobMaster's thread. **I/O:** the deployer's slot count (on Spark, a call
into the driver's JVM).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from barrierflow.cluster.attempt_supervisor import AttemptListener
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.scaling.reactive_mode import ReactiveMode
from barrierflow.cluster.scaling.rescaler import Rescaler, parallelism_of
from barrierflow.errors import ConfigurationError
from barrierflow.graph.execution_graph import ExecutionGraph

log = logging.getLogger("barrierflow.jobmaster")

LOOK_EVERY_S = 1.0


class ReactiveScaler(AttemptListener):
    def __init__(
        self,
        plan: JobPlan,
        mode: ReactiveMode,
        available_slots: Callable[[], int | None],
        rescaler: Rescaler,
    ) -> None:
        self._plan = plan
        self._mode = mode
        self._available_slots = available_slots
        self._rescaler = rescaler
        self._running: int | None = None  # the attempt whose tasks all run
        self._next_look = 0.0

    # --- before an attempt --------------------------------------------------------------------

    def before_attempt(
        self,
        restore_id: int | None,
        failed_at: float | None,
        wait: Callable[[float], None],
        canceled: Callable[[], bool],
    ) -> ExecutionGraph | None:
        """The graph the next attempt runs, when it is not the one the job ran (None: the
        same), for the first attempt and a restart after a failure at ``failed_at`` (epoch
        seconds), restoring checkpoint ``restore_id``; such a restart is a rescale, in the
        history. Waits (``wait(seconds)``, which answers requests) while the cluster offers no
        slot at all, until one comes or the job is canceled."""
        offered = self._available_slots()
        if offered is None:  # a deployer without a slot count: nothing to follow
            return None
        waited = False
        while (target := self._mode.parallelism_for(offered)) is None:
            if not waited:
                log.warning("Reactive mode: the cluster offers no task slot; waiting for one")
                waited = True
            wait(LOOK_EVERY_S)
            if canceled():
                return None
            offered = self._available_slots() or 0
        graph = self._graph_at(target)
        if graph is None:
            return None
        if failed_at is None:
            log.info("Reactive mode: the job starts on the %d task slots offered", offered)
        else:
            reason = f"{offered} task slots offered after the failure"
            self._rescaler.restarting(graph, reason, "reactive", failed_at, restore_id)
        return graph

    # --- while it runs ------------------------------------------------------------------------

    def attempt_running(self, number: int, now: float) -> None:
        self._running = number

    def attempt_supervised(self, number: int, now: float) -> None:
        if self._running != number or now < self._next_look or self._rescaler.in_progress:
            return
        self._next_look = now + LOOK_EVERY_S
        offered = self._available_slots()
        if offered is None:
            return
        target = self._mode.scale_up_to(offered, self._plan.graph.num_slots, now)
        if target is None or (graph := self._graph_at(target)) is None:
            return
        self._rescaler.request(
            target,
            _capped(graph, target),
            f"{offered} task slots offered for "
            f"{self._mode.stabilization_s:g} s, {self._plan.graph.num_slots} used",
            trigger="reactive",
        )

    # --- the graph ----------------------------------------------------------------------------

    def _graph_at(self, parallelism: int) -> ExecutionGraph | None:
        """The job at ``parallelism``, if that is not the graph it runs and it can run so."""
        regraph = self._plan.regraph
        if regraph is None:
            return None
        try:
            graph = regraph(parallelism, {})
            capped = _capped(graph, parallelism)
            if capped:
                graph = regraph(parallelism, capped)
        except ConfigurationError as e:
            log.warning("Reactive mode: the job cannot run at parallelism %d: %s", parallelism, e)
            return None
        if parallelism_of(graph) == parallelism_of(self._plan.graph):
            return None
        return graph


def _capped(graph: ExecutionGraph, parallelism: int) -> dict[str, int]:
    """Operators (by uid) whose own parallelism is above ``parallelism``, brought down to it."""
    return {
        node.uid: parallelism
        for vertex in graph.job_graph.vertices
        if vertex.parallelism > parallelism
        for node in vertex.chain
    }
