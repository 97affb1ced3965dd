"""PyFlink's entry points on local Spark: from_collection, print(), execute_and_collect,
from_source with a watermark strategy, one execute() per pipeline, and a PyFlink-style program
(timestamps, watermarks, an event-time timer, a tumbling window) that prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from barrierflow.common import Time, WatermarkStrategy
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.window import TumblingEventTimeWindows

pytestmark = pytest.mark.spark


def test_the_pyflink_style_example_prints_its_windows_and_timers(spark):
    done = subprocess.run(
        [sys.executable, "-m", "barrierflow.cli", "run", "examples/page_views_per_minute.py"],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert Counter(done.stdout.splitlines()) == Counter(
        [
            "/home 0-60 s: 2 views",
            "/cart 0-60 s: 1 views",  # bob's view, 2 s late but within the 10 s allowed
            "/cart 60-120 s: 1 views",
            "/home 60-120 s: 1 views",
            "/pay 120-180 s: 1 views",
            "/cart 120-180 s: 1 views",
            "alice quiet since 125 s",
            "bob quiet since 59 s",  # his timer at 62 s was replaced by the one at 119 s
            "carol quiet since 130 s",
        ]
    )


def test_print_prefixes_lines_with_the_subtask_when_parallel(spark, capfd):
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.from_collection(list(range(10))).map(lambda v: v * v).print()
    env.execute("print")
    lines = capfd.readouterr().out.splitlines()
    assert sorted(int(line.split("> ")[1]) for line in lines) == [v * v for v in range(10)]
    assert {line.split("> ")[0] for line in lines} == {"1", "2"}


def test_execute_and_collect_returns_every_result_and_each_execute_runs_its_own_pipeline(
    spark, capfd
):
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.from_collection(["x", "y"]).map(str.upper).print()
    env.execute("first")
    assert sorted(capfd.readouterr().out.split()) == ["1>", "2>", "X", "Y"]

    words = ["to", "be", "or", "not", "to", "be"]
    summed = env.from_collection(words).key_by(lambda w: w).reduce(lambda a, b: a + b)
    with summed.execute_and_collect("second") as results:
        collected = list(results)
    assert Counter(collected) == Counter(["to", "be", "or", "not", "toto", "bebe"])
    assert capfd.readouterr().out == "", "the second execute() ran the first pipeline again"

    first_seven = env.from_collection(range(1000)).execute_and_collect(limit=7)
    assert len(first_seven) == 7 and len(set(first_seven)) == 7
    assert set(first_seven) <= set(range(1000))


def test_from_source_with_a_watermark_strategy_windows_by_event_time(spark):
    env = StreamExecutionEnvironment().set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: v * 100
    )
    counts = (
        env.from_source(NumberSequenceSource(0, 999), strategy, "numbers")
        .key_by(lambda v: v % 2)
        .window(TumblingEventTimeWindows.of(Time.seconds(10)))
        .reduce(lambda a, b: a + b)
        .execute_and_collect("windows")
    )
    expected = Counter(
        sum(v for v in range(start, start + 100) if v % 2 == key)
        for start in range(0, 1000, 100)
        for key in (0, 1)
    )
    assert Counter(counts) == expected
