"""PyFlink's ``pyflink.datastream.timerservice``."""

from barrierflow.functions import TimerService

__all__ = ["TimerService"]
