"""Metric series for the autoscaler's decision, second by second, from a small model of a job:
a source (with or without a backlog metric) feeding a keyed vertex whose subtasks each take
``capacity`` records a second. The model is what the autoscaler sees of a real job: busy time
grows with the load until the vertex saturates, then the backlog grows; a rescale stops
processing for ``restart_s`` while input keeps arriving."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.cluster.scaling.autoscaling_decision import Decision, ScalingState, decide
from barrierflow.cluster.scaling.metric_window import MetricWindow, VertexSample, VertexShape

DECIDE_EVERY_S = 5


@dataclass
class Run:
    parallelism: list[tuple[float, int]] = field(default_factory=list)  # (t, new parallelism)
    decisions: list[tuple[float, Decision]] = field(default_factory=list)
    backlog: list[tuple[float, float]] = field(default_factory=list)

    def rescales_between(self, start: float, end: float) -> int:
        return sum(start <= t < end for t, _ in self.parallelism[1:])

    def final_parallelism(self) -> int:
        return self.parallelism[-1][1]


def simulate(
    rate: Callable[[float], float],
    seconds: int,
    settings: AutoscalerSettings,
    capacity: float = 1000.0,
    parallelism: int = 1,
    skew: Callable[[int], float] = lambda p: 1 / p,  # the busiest subtask's share of the load
    backlog_metric: bool = True,
    restart_s: int = 2,
    max_parallelism: int = 16,
) -> Run:
    run = Run(parallelism=[(0.0, parallelism)])
    window = MetricWindow(settings.metrics_window_s)
    backlog = consumed = 0.0
    last_rescale = 0.0
    scaled_up: dict[str, float] = {}
    down_until = 0.0
    for t in range(seconds):
        arriving = rate(t)
        share = skew(parallelism)
        ceiling = capacity / share  # the vertex is as fast as its busiest subtask
        if t < down_until:
            backlog += arriving
            run.backlog.append((t, backlog))
            continue
        taken = min(arriving + backlog, ceiling)
        backlog = max(0.0, backlog + arriving - taken)
        consumed += taken
        run.backlog.append((t, backlog))
        window.add(
            float(t),
            {
                "source": VertexSample(
                    busy_max=0.05,
                    records_in_per_s=taken,
                    backlog_label="Kafka lag" if backlog_metric else None,
                    pending=backlog,
                    consumed=consumed,
                ),
                "count": VertexSample(busy_max=taken * share / capacity, records_in_per_s=taken),
            },
        )
        if t % DECIDE_EVERY_S:
            continue
        shapes = [
            VertexShape("source", "Kafka Source", 1, 1, (), False),
            VertexShape("count", "keyed-count", parallelism, max_parallelism, ("source",), True),
        ]
        state = ScalingState(
            window_covers_s=window.covers_s(),
            since_rescale_s=t - last_rescale,
            restart_cost_s=restart_s,
            scaled_up_at={v: t - at for v, at in scaled_up.items()},
            key_groups=max_parallelism,
        )
        decision = decide([window.load(s) for s in shapes], state, settings)
        run.decisions.append((t, decision))
        new = decision.changes.get("count")
        if new is not None:
            if new > parallelism:
                scaled_up["count"] = t
            parallelism = new
            run.parallelism.append((t, new))
            window.clear()
            last_rescale = t
            down_until = t + restart_s
    return run
