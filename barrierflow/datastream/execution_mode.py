"""PyFlink's ``pyflink.datastream.execution_mode``."""

from barrierflow.api.execution_mode import RuntimeExecutionMode

__all__ = ["RuntimeExecutionMode"]
