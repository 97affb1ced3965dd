"""The autoscaler's settings: the Flink Kubernetes operator's ``job.autoscaler.*`` keys that
apply here, with their meaning, checked against each other. Performs no I/O.

Defaults suit a job that runs for days: a decision looks at a quarter of an hour of metrics,
waits five minutes after a rescale before the next, and drains a backlog over half an hour.
``restart.time`` is only the first estimate of what a rescale costs: once the job rescaled,
the downtime measured in its rescale history replaces it (Flink's operator assumes 5 minutes;
a rescale here takes seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from barrierflow.errors import ConfigurationError

PREFIX = "job.autoscaler."


@dataclass(frozen=True)
class AutoscalerSettings:
    target_utilization: float = 0.7
    utilization_boundary: float = 0.3
    metrics_window_s: float = 900.0
    stabilization_s: float = 300.0
    scale_down_max_factor: float = 0.6
    scale_up_grace_s: float = 3600.0
    catch_up_s: float = 1800.0
    restart_time_s: float = 10.0
    vertex_max_parallelism: int | None = None

    @property
    def lower(self) -> float:
        return self.target_utilization - self.utilization_boundary

    @property
    def upper(self) -> float:
        return self.target_utilization + self.utilization_boundary

    def check(self) -> AutoscalerSettings:
        """Refuses settings that contradict each other, naming the keys."""

        def refuse(keys: str, why: str) -> None:
            raise ConfigurationError(f"{keys}: {why}")

        if not 0 < self.target_utilization <= 1:
            refuse(
                PREFIX + "target.utilization",
                f"must be above 0 and at most 1, got {self.target_utilization}",
            )
        if not 0 <= self.utilization_boundary < self.target_utilization:
            refuse(
                f"{PREFIX}target.utilization.boundary and {PREFIX}target.utilization",
                f"the boundary ({self.utilization_boundary}) must be below the target "
                f"({self.target_utilization}): a band from {self.lower:g} would let every "
                "vertex scale down to one subtask",
            )
        if not 0 < self.scale_down_max_factor <= 1:
            refuse(
                PREFIX + "scale-down.max-factor",
                f"must be above 0 and at most 1, got {self.scale_down_max_factor}",
            )
        for key, seconds in (
            ("metrics.window", self.metrics_window_s),
            ("catch-up.duration", self.catch_up_s),
        ):
            if seconds <= 0:
                refuse(PREFIX + key, f"must be a positive duration, got {seconds:g} s")
        if self.vertex_max_parallelism is not None and self.vertex_max_parallelism < 1:
            refuse(
                PREFIX + "vertex.max-parallelism",
                f"must be at least 1, got {self.vertex_max_parallelism}",
            )
        return self
