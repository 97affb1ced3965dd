"""PyFlink's ``pyflink.common.time``."""

from barrierflow.eventtime.durations import Duration, Time

__all__ = ["Duration", "Time"]
