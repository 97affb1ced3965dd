"""PyFlink's ``pyflink.common.time``."""

from barrierflow.eventtime.durations import Duration, Instant, Time

__all__ = ["Duration", "Instant", "Time"]
