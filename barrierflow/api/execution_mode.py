"""How a job runs: as a stream (STREAMING, checkpointed, every update emitted), as a batch
over bounded inputs (BATCH: final results only, no checkpoints), or BATCH exactly when every
source is bounded (AUTOMATIC). ``execution.runtime-mode`` sets it too."""

from __future__ import annotations

import enum


class RuntimeExecutionMode(enum.Enum):
    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"
