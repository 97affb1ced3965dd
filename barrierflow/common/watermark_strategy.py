"""PyFlink's ``pyflink.common.watermark_strategy``."""

from barrierflow.eventtime.watermark_strategy import TimestampAssigner, WatermarkStrategy

__all__ = ["TimestampAssigner", "WatermarkStrategy"]
