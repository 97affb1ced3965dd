"""PyFlink's ``pyflink.common`` names, at the same path: a PyFlink program changes only its
imports. Each name is defined once, in barrierflow's own modules, and re-exported here."""

from typing import Any

from barrierflow.common.time import Duration, Time
from barrierflow.common.typeinfo import TypeInformation, Types
from barrierflow.common.types import Row, RowKind
from barrierflow.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = [
    "Configuration",
    "Duration",
    "ExecutionConfig",
    "Row",
    "RowKind",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]


def __getattr__(name: str) -> Any:
    """The environment's names load the API when first asked for: an executor unpickling a
    function that uses ``Types`` or ``Row`` loads neither."""
    if name == "Configuration":
        from barrierflow.api.configuration import Configuration

        return Configuration
    if name == "ExecutionConfig":
        from barrierflow.api.execution_config import ExecutionConfig

        return ExecutionConfig
    raise AttributeError(f"module 'barrierflow.common' has no attribute {name!r}")
