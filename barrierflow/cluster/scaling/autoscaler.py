"""The autoscaler at work (``job.autoscaler.enabled``): samples each vertex's load once a second
while every task of the job runs, decides (``autoscaling_decision.decide``) every tenth of the
metrics window (at most a minute), and applies a decision through the rescaler, which
rescales from a checkpoint taken for it. Every decision, made or not, is logged with its
inputs and its reason, and kept in the rescale history.

The slots come first: a decision that needs more task slots than the cluster offers asks Spark
for executors (``SparkContext.requestExecutors``) and waits up to ``SLOTS_WAIT_S`` for them;
then it scales to what there is. Its restart cost is what the last rescales measured (their
downtime), not a guess.

**Threading:** the JobMaster's thread. **I/O:** the deployer's slot count and requests (on
Spark, calls into the driver's JVM).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable

from barrierflow.cluster.attempt_supervisor import AttemptListener
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.cluster.scaling.autoscaling_decision import Decision, ScalingState, decide
from barrierflow.cluster.scaling.metric_window import MetricWindow, VertexSample, VertexShape
from barrierflow.cluster.scaling.rescaler import Rescaler, RescaleStatus
from barrierflow.graph.job_graph import JobGraph, JobVertex
from barrierflow.graph.transformation import Partitioning

log = logging.getLogger("barrierflow.autoscaler")

SAMPLE_EVERY_S = 1.0
SLOTS_WAIT_S = 60.0  # for the executors asked of Spark before scaling to the slots there are
COSTS_MEASURED = 3  # the restart cost: the longest downtime of the last rescales


class Autoscaler(AttemptListener):
    def __init__(
        self,
        plan: JobPlan,
        settings: AutoscalerSettings,
        status_view: JobStatusView,
        rescaler: Rescaler,
        available_slots: Callable[[], int | None],
        request_slots: Callable[[int], bool],
        enumerator_backlog: Callable[[str], float | None],
    ) -> None:
        """``enumerator_backlog(vertex)``: what its sources' split enumerators hold that no
        reader was given (the operator coordinator host's)."""
        self._plan = plan
        self._settings = settings
        self._status_view = status_view
        self._rescaler = rescaler
        self._available_slots = available_slots
        self._request_slots = request_slots
        self._enumerator_backlog = enumerator_backlog
        self._window = MetricWindow(settings.metrics_window_s)
        self._evaluate_every_s = min(60.0, max(1.0, settings.metrics_window_s / 10))
        self._running: int | None = None
        self._running_since = 0.0  # monotonic: the job's start at its current parallelism
        self._next_sample = self._next_decision = 0.0
        self._scaled_up_at: dict[str, float] = {}  # a chain's head uid -> monotonic time
        self._slots_asked: tuple[int, float] | None = None  # (slots wanted, when asked)

    def attempt_running(self, number: int, now: float) -> None:
        self._running = number
        self._running_since = time.monotonic()
        self._window.clear()

    def attempt_supervised(self, number: int, now: float) -> None:
        if self._running != number or self._rescaler.in_progress:
            return
        if now >= self._next_sample:
            self._next_sample = now + SAMPLE_EVERY_S
            self._window.add(now, self._sample())
        if now >= self._next_decision:
            self._next_decision = now + self._evaluate_every_s
            self._decide(now)

    # --- the samples ----------------------------------------------------------------------

    def _sample(self) -> dict[str, VertexSample]:
        by_vertex = defaultdict(list)
        for (vertex, _), status in self._status_view.subtask_rates().items():
            by_vertex[vertex].append(status)
        samples = {}
        for vertex, subtasks in by_vertex.items():
            told = [s.backlog for s in subtasks if s.backlog is not None]
            held = (self._enumerator_backlog(vertex) or 0.0) if told else 0.0
            samples[vertex] = VertexSample(
                busy_max=max(s.busy_ms_per_s for s in subtasks) / 1000,
                records_in_per_s=sum(s.records_in_per_s for s in subtasks),
                backlog_label=told[0].label if told else None,
                pending=sum(b.pending for b in told) + held,
                consumed=sum(b.consumed for b in told),
            )
        return samples

    # --- the decision ---------------------------------------------------------------------

    def _decide(self, now: float) -> None:
        job_graph = self._plan.graph.job_graph
        state = ScalingState(
            window_covers_s=self._window.covers_s(),
            since_rescale_s=time.monotonic() - self._running_since,
            restart_cost_s=self._restart_cost_s(),
            scaled_up_at={
                v.id: time.monotonic() - self._scaled_up_at[v.chain[0].uid]
                for v in job_graph.vertices
                if v.chain[0].uid in self._scaled_up_at
            },
            key_groups=job_graph.max_parallelism,
        )
        loads = [self._window.load(_shape(v, job_graph)) for v in job_graph.vertices]
        decision = decide(loads, state, self._settings)
        if decision.skipped is not None:
            log.debug("Autoscaler: %s", decision.skipped)  # waiting: no decision yet
            return
        changes = decision.changes
        if changes:
            changes = self._within_slots(changes, job_graph, now)
        if not changes:
            self._skip(decision)
            return
        self._apply(decision, changes, job_graph)

    def _within_slots(
        self, changes: dict[str, int], job_graph: JobGraph, now: float
    ) -> dict[str, int]:
        """``changes`` as the slots allow: more slots are asked of the cluster first, and
        waited for a while; then each vertex gets at most the slots there are."""
        wanted = max(changes.get(v.id, v.parallelism) for v in job_graph.vertices)
        offered = self._available_slots()
        if offered is None or wanted <= offered:
            self._slots_asked = None
            return changes
        if self._slots_asked is None or self._slots_asked[0] != wanted:
            if self._request_slots(wanted - offered):
                log.info(
                    "Autoscaler: asked the cluster for %d more task slots (%d wanted, %d "
                    "offered)", wanted - offered, wanted, offered,
                )  # fmt: skip
                self._slots_asked = (wanted, now)
                return {}
            self._slots_asked = (wanted, now - SLOTS_WAIT_S)  # nobody to ask: no wait
        elif now - self._slots_asked[1] < SLOTS_WAIT_S:
            return {}  # still waiting for them
        capped = {v: min(p, offered) for v, p in changes.items()}
        current = {v.id: v.parallelism for v in job_graph.vertices}
        return {v: p for v, p in capped.items() if p != current[v]}

    def _apply(self, decision: Decision, changes: dict[str, int], job_graph: JobGraph) -> None:
        reason = (
            "; ".join(v.reason for v in decision.verdicts if v.vertex in changes)
            or decision.summary()
        )
        log.info("Autoscaler: %s", reason)
        per_operator = {}
        for vertex in job_graph.vertices:
            if vertex.id in changes:
                per_operator.update(
                    dict.fromkeys((n.uid for n in vertex.chain), changes[vertex.id])
                )
                if changes[vertex.id] > vertex.parallelism:
                    self._scaled_up_at[vertex.chain[0].uid] = time.monotonic()
        self._rescaler.request(None, per_operator, reason, trigger="autoscaler")

    def _skip(self, decision: Decision) -> None:
        log.info("Autoscaler: %s", decision.summary())
        self._rescaler.decided_not_to("autoscaler", decision.summary())

    def _restart_cost_s(self) -> float:
        measured = [
            r.downtime_ms / 1000
            for r in self._rescaler.history.records
            if r.status is RescaleStatus.COMPLETED and r.downtime_ms is not None
        ][-COSTS_MEASURED:]
        return max(measured) if measured else self._settings.restart_time_s


def _shape(vertex: JobVertex, job_graph: JobGraph) -> VertexShape:
    inputs = job_graph.inputs_of(vertex)
    return VertexShape(
        vertex.id,
        vertex.name,
        vertex.parallelism,
        1 if any(n.non_parallel for n in vertex.chain) else job_graph.max_parallelism,
        tuple(e.source.id for e in inputs),
        any(e.partitioner.kind is Partitioning.KEY_GROUPS for e in inputs),
        vertex.fixed_parallelism,
    )
