"""PyFlink's ``pyflink.common`` names, at the same path: a PyFlink program changes only its
imports. Each name is defined once, in barrierflow's own modules, and re-exported here."""

from barrierflow.common.time import Duration, Time
from barrierflow.common.typeinfo import TypeInformation, Types
from barrierflow.common.types import Row, RowKind
from barrierflow.common.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = [
    "Duration",
    "Row",
    "RowKind",
    "Time",
    "TimestampAssigner",
    "TypeInformation",
    "Types",
    "WatermarkStrategy",
]
