"""PyFlink's ``pyflink.common.execution_config``."""

from barrierflow.api.execution_config import ExecutionConfig

__all__ = ["ExecutionConfig"]
