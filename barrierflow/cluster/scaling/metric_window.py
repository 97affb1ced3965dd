"""The autoscaler's metrics window: a sample of each vertex every second or so, the last
``job.autoscaler.metrics.window`` of them kept, summed up as each vertex's load over the window
(``VertexLoad``). Samples of one parallelism only: a rescale starts the window over. Performs
no I/O.

Busy time is the busiest subtask's (Flink's FLINK-30652: an average hides the one subtask that
holds the vertex back), averaged over the window. A source's backlog growth is the slope of its
pending amount over the window (least squares: one late sample does not make a trend).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from barrierflow.cluster.scaling.autoscaling_decision import Backlog, VertexLoad


@dataclass(frozen=True)
class VertexSample:
    busy_max: float  # the busiest subtask's busy fraction (0..1)
    records_in_per_s: float  # the whole vertex's
    backlog_label: str | None = None  # a source that tells its backlog: its kind
    pending: float = 0.0  # summed over its readers (and its split enumerator)
    consumed: float = 0.0  # cumulative, in the same unit


@dataclass(frozen=True)
class VertexShape:
    """What the graph says of a vertex."""

    id: str
    name: str
    parallelism: int
    max_parallelism: int
    inputs: tuple[str, ...]
    keyed: bool
    fixed: str | None = None  # why its parallelism cannot change (``JobVertex``'s)


class MetricWindow:
    def __init__(self, length_s: float) -> None:
        self._length_s = length_s
        self._samples: deque[tuple[float, Mapping[str, VertexSample]]] = deque()

    def add(self, at: float, samples: Mapping[str, VertexSample]) -> None:
        """One sample of every vertex at ``at`` (seconds, monotonic)."""
        self._samples.append((at, samples))
        while len(self._samples) > 2 and self._samples[1][0] <= at - self._length_s:
            self._samples.popleft()

    def clear(self) -> None:
        self._samples.clear()

    def covers_s(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        return self._samples[-1][0] - self._samples[0][0]

    def load(self, shape: VertexShape) -> VertexLoad:
        series = [(at, s[shape.id]) for at, s in self._samples if shape.id in s]
        n = max(1, len(series))
        return VertexLoad(
            shape.id,
            shape.name,
            shape.parallelism,
            shape.max_parallelism,
            busy=sum(s.busy_max for _, s in series) / n,
            records_in_per_s=sum(s.records_in_per_s for _, s in series) / n,
            inputs=shape.inputs,
            keyed=shape.keyed,
            backlog=_backlog(series),
            fixed=shape.fixed,
        )


def _backlog(series: list[tuple[float, VertexSample]]) -> Backlog | None:
    told = [(at, s) for at, s in series if s.backlog_label is not None]
    if len(told) < 2:
        return None
    elapsed = told[-1][0] - told[0][0]
    if elapsed <= 0:
        return None
    last = told[-1][1]
    assert last.backlog_label is not None  # a sample that told its backlog
    return Backlog(
        last.backlog_label,
        last.pending,
        growth_per_s=_slope([(at, s.pending) for at, s in told]),
        consumed_per_s=max(0.0, (last.consumed - told[0][1].consumed) / elapsed),
    )


def _slope(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return 0.0
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread
