"""What a sink promises about each record when the job fails and recovers. Performs no I/O."""

from __future__ import annotations

from enum import Enum


class DeliveryGuarantee(Enum):
    """Flink's names. EXACTLY_ONCE needs checkpointing: without it a transactional sink commits
    only when its input ends."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"

    @classmethod
    def parse(cls, value: DeliveryGuarantee | str, owner: str) -> DeliveryGuarantee:
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for g in cls:
                if value.strip().lower().replace("_", "-") == g.value:
                    return g
        names = ", ".join(g.name for g in cls)
        raise ValueError(f"{owner}: delivery guarantee {value!r} is not one of {names}")
