"""PyFlink's ``pyflink.datastream.timerservice``."""

from barrierflow.datastream.functions.one_input import TimerService

__all__ = ["TimerService"]
