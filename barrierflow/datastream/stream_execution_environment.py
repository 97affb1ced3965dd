"""PyFlink's ``pyflink.datastream.stream_execution_environment``."""

from barrierflow.api.environment import StreamExecutionEnvironment

__all__ = ["StreamExecutionEnvironment"]
