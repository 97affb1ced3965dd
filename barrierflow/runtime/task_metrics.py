"""TaskIOMetrics: what one subtask counts for the JobMaster's metrics (records in and out, time
idle, back-pressured and busy), cheaply enough for the hot loop.

Counted per buffer or batch, never per record: one ``len()`` and an addition per buffer, and a
clock read around each wait (waits are where the task has nothing better to do). Busy time is
not measured; it is what is left of the subtask's running time once the waits are subtracted.

**Threading:** the counters are written by the task's own thread only; ``sample`` is called
from the slot's thread and reads them without a lock. Each read is of one Python int (atomic
under the GIL); a sample may be a few microseconds out of step between two counters, which a
rate over half a second does not notice.
"""

from __future__ import annotations

import time

from barrierflow.control.messages import SubtaskMetrics
from barrierflow.metrics import MetricRegistry
from barrierflow.protocol.source_backlog import SourceBacklog

_NS_PER_MS = 1_000_000


class TaskIOMetrics:
    def __init__(self, vertex: str, subtask: int) -> None:
        self.vertex = vertex
        self.subtask = subtask
        self.records_in = 0
        self.first_record_at: float | None = None  # epoch seconds: how long a recovery took
        self.records_out = 0
        self.idle_ns = 0  # waiting for input
        self.backpressured_ns = 0  # waiting for output credit
        self._started_ns: int | None = None
        self._stopped_ns: int | None = None
        self.user = MetricRegistry()  # the program's metrics, sampled with these
        self.backlog: SourceBacklog | None = None  # a source's, refreshed by its input
        # records per buffer the input gate asks for (the task sets it: None without a gate)
        self.debloated_buffer_size: int | None = None

    def took_in(self, count: int) -> None:
        """The subtask took ``count`` records in (a buffer, or a batch its source read)."""
        if self.first_record_at is None:
            self.first_record_at = time.time()
        self.records_in += count

    def start(self) -> None:
        """The subtask processes from now on (its time before, restoring, is not counted)."""
        self._started_ns = time.perf_counter_ns()

    def stop(self) -> None:
        """The subtask ended: its time stops counting (an ended subtask is not busy)."""
        if self._stopped_ns is None:
            self._stopped_ns = time.perf_counter_ns()

    def sample(self) -> SubtaskMetrics | None:
        """The counters so far; None before ``start``."""
        started = self._started_ns
        if started is None:
            return None
        idle, backpressured = self.idle_ns, self.backpressured_ns
        now = self._stopped_ns or time.perf_counter_ns()
        busy = max(0, now - started - idle - backpressured)
        return SubtaskMetrics(
            self.vertex,
            self.subtask,
            self.records_in,
            self.records_out,
            busy_ms=busy / _NS_PER_MS,
            backpressured_ms=backpressured / _NS_PER_MS,
            idle_ms=idle / _NS_PER_MS,
            user=tuple(self.user.sample()),
            first_record_at=self.first_record_at,
            backlog=self.backlog,
            debloated_buffer_size=self.debloated_buffer_size,
        )
