"""The coordinator's two clocks, injected so that its rules are tested without waiting.

``monotonic_s`` measures durations (intervals, timeouts); ``wall_ms`` stamps checkpoints.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic_s(self) -> float: ...

    def wall_ms(self) -> int: ...


class SystemClock:
    def monotonic_s(self) -> float:
        return time.monotonic()

    def wall_ms(self) -> int:
        return int(time.time() * 1000)
