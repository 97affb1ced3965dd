"""Buffer debloating (Flink's FLIP-183): the buffer size a consumer announces to its producers,
so that the data in flight towards it holds about a target time of its own work.

An aligned barrier is processed after every record sent before it; with full buffers of 1,024
records and a consumer that takes 2 ms a record, that is seconds of work per channel. The
consumer measures how many records it takes per second of the time it is not idle (time
waiting for input says nothing of how fast it works; time waiting for output credit does:
its own consumer sets its pace), and sizes the buffers so that the buffers in flight hold
``target`` of that work: ``size = throughput * target / buffers_in_use``. As Flink's
``BufferDebloater``, the size is smoothed (an exponential moving average over ``samples``
periods, a step at most doubling it, so that it grows as fast as it shrinks), kept between a
floor and the configured buffer size, and announced only when it moved by more than
``threshold_percentages`` (or reached a bound), so that producers are not told of noise.

A size in records, where Flink's is in bytes: a record's cost here is its processing, not its
bytes, and records per buffer is what producers count. ``buffers_in_use`` is what may be in
flight on each channel: the credited buffers, the one the producer fills, the one the consumer
takes (docs/adr/0029-buffer-debloating.md).

Performs no I/O: the task reads its clock and its counters and hands them in.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_BUFFER_SIZE = 8  # records: the floor, against a transient measurement (docs/adr/0029)
_NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class DebloatSettings:
    """Flink's ``taskmanager.network.memory.buffer-debloat.*``, and the sizes' bounds."""

    target_ms: int = 1000  # the time of work the data in flight should hold
    period_ms: int = 200  # how often the throughput is measured and the size recalculated
    samples: int = 20  # periods the moving average spans
    threshold_percentages: int = 25  # smaller changes are not announced
    max_size: int = 1024  # records: the configured buffer size
    min_size: int = MIN_BUFFER_SIZE

    def __post_init__(self) -> None:
        if not 1 <= self.min_size <= self.max_size:
            raise ValueError(f"buffer sizes {self.min_size}..{self.max_size}: min > max or < 1")
        if self.target_ms <= 0 or self.period_ms <= 0 or self.samples < 1:
            raise ValueError("target and period must be positive, samples at least 1")


class BufferDebloater:
    """The decision of one input gate: ``sample`` every turn of the task's loop; it returns the
    size to announce once a period passed and the size moved enough, else None."""

    __slots__ = (
        "_alpha",
        "_buffers_in_use",
        "_last_idle_ns",
        "_last_ns",
        "_last_records",
        "_settings",
        "_size",
        "announced",
        "throughput",
    )

    def __init__(
        self, settings: DebloatSettings, buffers_in_use: int, now_ns: int, records_in: int = 0,
        idle_ns: int = 0,
    ) -> None:  # fmt: skip
        """``buffers_in_use``: the buffers that may be in flight towards the gate, over all its
        channels; ``now_ns``, ``records_in``, ``idle_ns``: the task's clock and counters now,
        from which the first period is measured."""
        self._settings = settings
        self._buffers_in_use = max(1, buffers_in_use)
        self._alpha = 2.0 / (settings.samples + 1)
        self._size = float(settings.max_size)  # the moving average
        self.announced = settings.max_size  # what the producers were told (or start with)
        self.throughput = 0.0  # records per second not idle, of the last period measured
        self._last_ns, self._last_records, self._last_idle_ns = now_ns, records_in, idle_ns

    def sample(self, now_ns: int, records_in: int, idle_ns: int) -> int | None:
        """The task's clock, the records it took in and the time it waited for input, all
        since it started; the size to announce now, if any."""
        elapsed_ns = now_ns - self._last_ns
        if elapsed_ns < self._settings.period_ms * 1_000_000:
            return None
        busy_ns = elapsed_ns - (idle_ns - self._last_idle_ns)
        records = records_in - self._last_records
        self._last_ns, self._last_records, self._last_idle_ns = now_ns, records_in, idle_ns
        if busy_ns <= 0:
            return None  # idle the whole period: nothing learnt of its pace
        self.throughput = records * _NS_PER_S / busy_ns
        return self.recalculate(self.throughput)

    def recalculate(self, throughput: float) -> int | None:
        """The size for ``throughput`` records per second: announced if it moved enough."""
        settings = self._settings
        desired = throughput * settings.target_ms / 1000 / self._buffers_in_use
        desired = min(desired, 2 * self._size)  # grows at most as fast as it shrinks
        self._size += self._alpha * (desired - self._size)
        self._size = max(settings.min_size, min(self._size, settings.max_size))
        size = round(self._size)
        if self._skip(size):
            return None
        self.announced = size
        return size

    def _skip(self, size: int) -> bool:
        """Whether ``size`` is too close to the one announced to be worth telling."""
        last, settings = self.announced, self._settings
        if size == last:
            return True
        if size <= settings.min_size or size >= settings.max_size:
            return False  # a bound is always reached, not approached for ever
        return abs(size - last) < last * settings.threshold_percentages / 100

    def estimated_time_to_consume_ms(self) -> float:
        """How long the buffers in flight at the announced size take at the last throughput
        (Flink's ``estimatedTimeToConsumeBuffersMs``)."""
        if self.throughput <= 0:
            return 0.0
        return self.announced * self._buffers_in_use * 1000 / self.throughput


def buffers_in_use(num_channels: int, initial_credit: int) -> int:
    """What may be in flight on ``num_channels`` channels at once: per channel the credited
    buffers, the one its producer fills (or holds without credit) and the one the consumer
    takes."""
    return num_channels * (initial_credit + 2)
