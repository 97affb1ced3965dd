"""How a task combines the watermarks of its input channels into its own, as a pure state
machine (Flink's ``StatusWatermarkValve``).

A task's watermark is the minimum over its *active* channels: a channel whose source has been
idle longer than ``WatermarkStrategy.with_idleness`` says so in-band, and is left out until it
sends data again, so one quiet Kafka partition does not hold back every window downstream. A
channel that comes back with a watermark behind the task's is not counted until it catches up
(its records are late; the task's watermark never goes back). A channel whose input ended
counts as +infinity, so the end of every input fires every event-time timer. When every channel
is idle the task is idle too, and says so downstream.

Watermarks are not checkpointed (as in Flink): a restored job starts from the minimum again and
its sources generate them anew.

The task feeds it what arrives and emits what it returns; times are milliseconds of event time.
Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_WATERMARK = -(2**63)  # nothing has been seen yet
MAX_WATERMARK = 2**63 - 1  # the input ended: every timer may fire


@dataclass(frozen=True, slots=True)
class EmitWatermark:
    timestamp: int


@dataclass(frozen=True, slots=True)
class EmitIdleness:
    idle: bool  # True: every input channel is idle; False: one became active again


ValveAction = EmitWatermark | EmitIdleness


@dataclass(slots=True)
class _Channel:
    watermark: int = MIN_WATERMARK
    idle: bool = False
    aligned: bool = True  # counted in the minimum (active and not behind the output)


class WatermarkValve:
    def __init__(self, num_channels: int) -> None:
        if num_channels < 1:
            raise ValueError("a watermark valve needs at least one input channel")
        self._channels = [_Channel() for _ in range(num_channels)]
        self._watermark = MIN_WATERMARK
        self._idle = False

    @property
    def watermark(self) -> int:
        """The last watermark emitted (``MIN_WATERMARK`` before the first)."""
        return self._watermark

    @property
    def idle(self) -> bool:
        return self._idle

    def on_watermark(self, channel: int, timestamp: int) -> list[ValveAction]:
        c = self._channels[channel]
        if c.idle or timestamp <= c.watermark:
            return []  # an idle channel's watermark waits for its data; none goes back
        c.watermark = timestamp
        if not c.aligned and timestamp >= self._watermark:
            c.aligned = True  # caught up with the output
        return self._advance()

    def on_idle(self, channel: int) -> list[ValveAction]:
        c = self._channels[channel]
        if c.idle:
            return []
        c.idle, c.aligned = True, False
        if all(ch.idle for ch in self._channels):
            self._idle = True
            # All quiet: what the channels reached is safe to pass on (Flink does the same).
            reached = max(ch.watermark for ch in self._channels)
            actions: list[ValveAction] = []
            if reached > self._watermark:
                self._watermark = reached
                actions.append(EmitWatermark(reached))
            return [*actions, EmitIdleness(True)]
        return self._advance()

    def on_active(self, channel: int) -> list[ValveAction]:
        c = self._channels[channel]
        if not c.idle:
            return []
        c.idle = False
        c.aligned = c.watermark >= self._watermark
        if self._idle:
            self._idle = False
            return [EmitIdleness(False)]
        return []

    def on_end_of_input(self, channel: int) -> list[ValveAction]:
        """The channel's input ended: it counts as +infinity from now on."""
        c = self._channels[channel]
        c.idle, c.aligned, c.watermark = False, True, MAX_WATERMARK
        actions: list[ValveAction] = []
        if self._idle:
            self._idle = False
            actions.append(EmitIdleness(False))
        return actions + self._advance()

    def _advance(self) -> list[ValveAction]:
        counted = [c.watermark for c in self._channels if c.aligned and not c.idle]
        if not counted:
            return []
        low = min(counted)
        if low <= self._watermark:
            return []
        self._watermark = low
        return [EmitWatermark(low)]
