"""PyFlink's module paths name barrierflow's own objects: one implementation per name."""

from __future__ import annotations

import importlib

import pytest

from barrierflow.eventtime import durations, watermark_strategy

PATHS = [
    ("barrierflow.common", "Duration", durations.Duration),
    ("barrierflow.common", "Time", durations.Time),
    ("barrierflow.common.time", "Duration", durations.Duration),
    ("barrierflow.common", "WatermarkStrategy", watermark_strategy.WatermarkStrategy),
    ("barrierflow.common", "TimestampAssigner", watermark_strategy.TimestampAssigner),
    ("barrierflow.common.watermark_strategy", "WatermarkStrategy",
     watermark_strategy.WatermarkStrategy),
]  # fmt: skip


@pytest.mark.parametrize(("module", "name", "implementation"), PATHS)
def test_a_pyflink_path_names_the_one_implementation(module, name, implementation):
    assert getattr(importlib.import_module(module), name) is implementation
