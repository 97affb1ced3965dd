"""PyFlink's module paths name barrierflow's own objects: one implementation per name."""

from __future__ import annotations

import importlib

import pytest

from barrierflow.api import datastream, environment, windowed_stream
from barrierflow.common import typeinfo
from barrierflow.datastream.functions import one_input as functions
from barrierflow.eventtime import durations, watermark_strategy
from barrierflow.state import descriptors
from barrierflow.windowing import window_assigners as assigners
from barrierflow.windowing import window_triggers as triggers
from barrierflow.windowing import windows

PATHS = [
    ("barrierflow.common", "Duration", durations.Duration),
    ("barrierflow.common", "Time", durations.Time),
    ("barrierflow.common.time", "Duration", durations.Duration),
    ("barrierflow.common", "WatermarkStrategy", watermark_strategy.WatermarkStrategy),
    ("barrierflow.common.watermark_strategy", "TimestampAssigner",
     watermark_strategy.TimestampAssigner),
    ("barrierflow.common.watermark_strategy", "WatermarkStrategy",
     watermark_strategy.WatermarkStrategy),
    ("barrierflow.datastream", "StreamExecutionEnvironment",
     environment.StreamExecutionEnvironment),
    ("barrierflow.datastream", "KeyedStream", datastream.KeyedStream),
    ("barrierflow.datastream", "WindowedStream", windowed_stream.WindowedStream),
    ("barrierflow.datastream", "TimeDomain", functions.TimeDomain),
    ("barrierflow.datastream", "KeyedProcessFunction", functions.KeyedProcessFunction),
    ("barrierflow.datastream.functions", "ProcessWindowFunction", functions.ProcessWindowFunction),
    ("barrierflow.datastream.functions", "KeySelector", functions.KeySelector),
    ("barrierflow.datastream.window", "TumblingEventTimeWindows",
     assigners.TumblingEventTimeWindows),
    ("barrierflow.datastream.window", "TimeWindow", windows.TimeWindow),
    ("barrierflow.datastream.window", "CountTrigger", triggers.CountTrigger),
    ("barrierflow.datastream.state", "ValueStateDescriptor", descriptors.ValueStateDescriptor),
    ("barrierflow.common", "Types", typeinfo.Types),
    ("barrierflow.common.typeinfo", "Types", typeinfo.Types),
]  # fmt: skip


def test_type_information_is_accepted_where_pyflink_programs_pass_it():
    from barrierflow.common import Types
    from barrierflow.datastream import StreamExecutionEnvironment

    row = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.LONG()])
    assert repr(row) == "ROW_NAMED(word: STRING(), count: LONG())"
    env = StreamExecutionEnvironment()
    stream = env.from_collection([("a", 1)], type_info=row)
    stream.map(lambda r: r, output_type=row).flat_map(lambda r: [r], output_type=row).key_by(
        lambda r: r[0], key_type=Types.STRING()
    )
    with pytest.raises(TypeError, match="as many field names"):
        Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()])
    with pytest.raises(TypeError, match="type information"):
        Types.LIST(int)


def test_unpickling_a_function_of_the_pyflink_path_loads_no_api():
    import subprocess
    import sys

    code = (
        "import sys, barrierflow.datastream.functions, barrierflow.datastream.window;"
        "print([m for m in sys.modules if m.startswith(('barrierflow.api', 'barrierflow.cluster',"
        " 'pyspark'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("module", "name", "implementation"), PATHS)
def test_a_pyflink_path_names_the_one_implementation(module, name, implementation):
    assert getattr(importlib.import_module(module), name) is implementation
