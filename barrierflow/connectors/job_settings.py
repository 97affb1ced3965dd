"""What a connector may check its configuration against on the driver, before the job is
submitted (``Source.check``, ``Sink.check``). Performs no I/O."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobSettings:
    checkpointing: bool
    exactly_once: bool  # the checkpointing mode
    interval_ms: int
    timeout_ms: int
    max_concurrent: int = 1
