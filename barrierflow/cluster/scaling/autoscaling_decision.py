"""The autoscaler's decision: from each vertex's load over the metrics window, the parallelism
that keeps it inside the target utilization band and lets the sources' backlog catch up, with
the reason for every vertex. A pure function, tested on recorded metric series. Performs no I/O.

For each vertex, in the order data flows:

- **Demand**, as a multiple of what the vertex takes in now. A source whose backlog is known
  must take in what arrives (what it reads, plus the backlog's growth) and drain the backlog
  within the catch-up duration, including what piles up while the job rescales (the measured
  restart cost); a source that cannot tell its backlog is scaled on busy time alone (demand
  1). Downstream of it a vertex gets the largest demand of its inputs.
- **Utilization at that demand**: the busiest subtask's busy fraction times the demand. The
  busiest, not the average: a skewed vertex is as slow as its busiest subtask.
- Inside ``target ± boundary``, nothing changes. A saturated vertex (its busiest subtask busy
  95% of the time or more) is above the band whatever the demand says: what it could take is
  unknown, and with Flink's default boundary the band reaches 1.0, which busy time never
  exceeds. Outside the band, the parallelism that brings it to the target,
  ``ceil(parallelism * utilization / target)``, but:
  - never scaled down while its busiest subtask is at or above the band's upper bound, nor
    within the scale-up grace period after it scaled up, nor by more than the max factor;
  - never above its max parallelism (a non-parallel vertex, max 1, is left alone);
  - a keyed vertex takes the next parallelism that divides the key groups evenly.

Whether it is time to decide at all (the window is full, the stabilization interval passed) is
``decide``'s first question; the slots the cluster can give are the caller's (it asks Spark for
more first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings

SATURATED = 0.95  # a busiest subtask this busy: the vertex takes all it can


@dataclass(frozen=True)
class Backlog:
    """A source's backlog over the window, in its own unit (records, bytes, files)."""

    label: str  # what it is, for the reason: "Kafka lag", "unread file bytes"
    pending: float  # at the end of the window
    growth_per_s: float
    consumed_per_s: float  # what its readers took from it, in the same unit


@dataclass(frozen=True)
class VertexLoad:
    """One vertex over the metrics window."""

    id: str
    name: str
    parallelism: int
    max_parallelism: int  # its own bound: the job's, vertex.max-parallelism, 1 if non-parallel
    busy: float  # mean over the window of its busiest subtask's busy fraction (0..1)
    records_in_per_s: float
    inputs: tuple[str, ...] = ()  # the ids of the vertices it reads from
    keyed: bool = False  # partitioned by key: key groups divide among its subtasks
    backlog: Backlog | None = None  # a source's, when it can tell
    fixed: str | None = None  # why its parallelism cannot change: it is kept


@dataclass(frozen=True)
class ScalingState:
    """What the decision needs of the job's past."""

    window_covers_s: float  # how much of the metrics window the samples cover
    since_rescale_s: float  # since the job last (re)started at its current parallelism
    restart_cost_s: float  # what a rescale costs: the measured downtime, else restart.time
    scaled_up_at: Mapping[str, float] = field(default_factory=dict)  # vertex -> seconds ago
    key_groups: int = 128  # the job's max parallelism


@dataclass(frozen=True)
class VertexVerdict:
    vertex: str
    name: str
    parallelism: int
    new_parallelism: int
    reason: str


@dataclass(frozen=True)
class Decision:
    verdicts: tuple[VertexVerdict, ...] = ()
    skipped: str | None = None  # why no vertex was looked at

    @property
    def changes(self) -> dict[str, int]:
        """Vertex id -> its new parallelism, for the vertices that change."""
        return {
            v.vertex: v.new_parallelism for v in self.verdicts if v.new_parallelism != v.parallelism
        }

    def summary(self) -> str:
        if self.skipped is not None:
            return self.skipped
        changed = [v for v in self.verdicts if v.new_parallelism != v.parallelism]
        shown = changed or self.verdicts
        text = "; ".join(v.reason for v in shown)
        return text if changed else f"no change: {text}"


def decide(
    loads: Sequence[VertexLoad], state: ScalingState, settings: AutoscalerSettings
) -> Decision:
    """``loads`` in the order data flows (inputs first)."""
    if state.window_covers_s < settings.metrics_window_s:
        return Decision(
            skipped=f"metrics window not full yet ({state.window_covers_s:.0f} of "
            f"{settings.metrics_window_s:.0f} s)"
        )
    if state.since_rescale_s < settings.stabilization_s:
        return Decision(
            skipped=f"stabilizing after the last rescale ({state.since_rescale_s:.0f} of "
            f"{settings.stabilization_s:.0f} s)"
        )
    demand: dict[str, tuple[float, str]] = {}
    verdicts = []
    for load in loads:
        demand[load.id] = _demand(load, demand, state, settings)
        verdicts.append(_verdict(load, *demand[load.id], state, settings))
    return Decision(tuple(verdicts))


def _demand(
    load: VertexLoad,
    upstream: Mapping[str, tuple[float, str]],
    state: ScalingState,
    settings: AutoscalerSettings,
) -> tuple[float, str]:
    """The load the vertex must take, as a multiple of what it takes now, and why."""
    if load.inputs:
        multiple, why = max((upstream[i] for i in load.inputs if i in upstream), default=(1.0, ""))
        return multiple, why
    backlog = load.backlog
    if backlog is None:
        return 1.0, "no backlog metric: on busy time alone"
    trend = "growing" if backlog.growth_per_s > 0 else "shrinking"
    why = (
        f"{backlog.label} {_count(backlog.pending)}, {trend} {_count(abs(backlog.growth_per_s))}/s"
    )
    if backlog.consumed_per_s <= 0:
        # nothing read in the window: a stuck source says nothing of its speed
        return 1.0, why + " (nothing read: on busy time alone)"
    arrival = max(0.0, backlog.consumed_per_s + backlog.growth_per_s)
    needed = (
        arrival * (1 + state.restart_cost_s / settings.catch_up_s)
        + backlog.pending / settings.catch_up_s
    )
    return needed / backlog.consumed_per_s, why


def _verdict(
    load: VertexLoad,
    multiple: float,
    why: str,
    state: ScalingState,
    settings: AutoscalerSettings,
) -> VertexVerdict:
    p = load.parallelism
    utilization = load.busy * multiple
    inputs = f"busy {load.busy:.2f}" + (f" x demand {multiple:.2f}" if multiple != 1 else "")
    inputs += f", {why}" if why else ""

    def keep(reason: str) -> VertexVerdict:
        return VertexVerdict(load.id, load.name, p, p, f"{load.name} stays at {p}: {reason}")

    limit = min(load.max_parallelism, settings.vertex_max_parallelism or load.max_parallelism)
    if load.max_parallelism == 1:
        return keep("its max parallelism is 1 (a non-parallel operator)")
    if load.fixed is not None:
        return keep(f"its parallelism cannot change: {load.fixed} ({inputs})")
    band = f"{settings.lower:.2f}..{settings.upper:.2f}"
    saturated = load.busy >= SATURATED
    if settings.lower <= utilization <= settings.upper and not saturated:
        return keep(f"utilization {utilization:.2f} within {band} ({inputs})")
    wanted = max(1, math.ceil(p * utilization / settings.target_utilization - 1e-9))
    if wanted < p:
        busy_bound = min(settings.upper, SATURATED)
        if load.busy >= busy_bound:
            return keep(f"busiest subtask busy {load.busy:.2f} >= {busy_bound:.2f} ({inputs})")
        ago = state.scaled_up_at.get(load.id)
        if ago is not None and ago < settings.scale_up_grace_s:
            return keep(
                f"scaled up {ago:.0f} s ago, within the grace period of "
                f"{settings.scale_up_grace_s:.0f} s ({inputs})"
            )
        wanted = max(wanted, math.ceil(p * (1 - settings.scale_down_max_factor)))
    wanted = min(wanted, limit)
    if load.keyed:
        wanted = _dividing(wanted, limit, state.key_groups)
    if wanted == p:
        if wanted == limit and wanted < math.ceil(p * utilization / settings.target_utilization):
            return keep(
                f"utilization {utilization:.2f} wants more, but {p} is its bound ({inputs})"
            )
        if utilization < settings.lower:
            return keep(f"utilization {utilization:.2f} below {band}, at the least ({inputs})")
        return keep(f"saturated, but the demand needs no more than {p} ({inputs})")
    if wanted > p:
        why = f"utilization {utilization:.2f} > {settings.upper:.2f}"
        if saturated and utilization <= settings.upper:
            why = f"saturated, busiest subtask busy {load.busy:.2f}"
    else:
        why = f"utilization {utilization:.2f} < {settings.lower:.2f}"
    return VertexVerdict(
        load.id, load.name, p, wanted, f"scaled {load.name} {p} -> {wanted}: {why} ({inputs})"
    )


def _dividing(wanted: int, limit: int, key_groups: int) -> int:
    """The smallest parallelism from ``wanted`` up to ``limit`` among which the key groups
    divide evenly; ``wanted`` if none does."""
    for p in range(wanted, min(limit, key_groups) + 1):
        if key_groups % p == 0:
            return p
    return wanted


def _count(value: float) -> str:
    return f"{value:,.0f}"
