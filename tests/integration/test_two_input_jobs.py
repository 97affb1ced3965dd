"""Two-input operators as whole jobs on Spark: event time through connect (the operator's
watermark is the minimum of its two inputs'), and a savepoint of broadcast and connect jobs
taken while connect still tagged and unioned its inputs, restored at another parallelism and
into the other backend."""

from __future__ import annotations

import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import (
    CoMapFunction,
    KeyedCoProcessFunction,
    MapFunction,
    ReduceFunction,
)
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.datastream.window import TumblingEventTimeWindows
from tests.jobs import connected_upgrade

pytestmark = pytest.mark.spark

GOLDEN = Path(__file__).parent / "golden" / "connect_savepoint"
GOLDEN_EVENTS = 8000  # the n the golden savepoint's job ran with (connected_upgrade)

N = 600  # records per input, timestamps 1..N ms
WINDOW_MS = 50


class Slow(MapFunction):
    """Holds one input back, so that a watermark taken from the other alone would run ahead."""

    def map(self, value):
        time.sleep(0.002)
        return value


def _timestamps() -> WatermarkStrategy:
    return WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(lambda value, _: value)


class Seen(KeyedCoProcessFunction):
    """Keeps the highest timestamp each input delivered; a timer at each record of input 1
    reports, when it fires, whether both inputs had passed its time."""

    def open(self, runtime_context):
        self.highest = [
            runtime_context.get_state(ValueStateDescriptor(f"highest{i}")) for i in (1, 2)
        ]

    def _saw(self, i, ctx):
        state = self.highest[i]
        state.update(max(state.value() or 0, ctx.timestamp()))

    def process_element1(self, value, ctx):
        self._saw(0, ctx)
        ctx.timer_service().register_event_time_timer(value)

    def process_element2(self, value, ctx):
        self._saw(1, ctx)

    def on_timer(self, timestamp, ctx):
        yield "timer", timestamp, [s.value() > timestamp for s in self.highest]


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


class Count(ReduceFunction):
    def reduce(self, a, b):
        return a[0], a[1] + b[1]


def test_timers_and_windows_after_connect_fire_only_when_both_inputs_passed_their_time(spark):
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    env.configure({"pipeline.auto-watermark-interval": 10})
    fast = env.from_source(NumberSequenceSource(1, N), "fast").assign_timestamps_and_watermarks(
        _timestamps()
    )
    slow = (
        env.from_source(NumberSequenceSource(1, N), "slow")
        .map(Slow())
        .assign_timestamps_and_watermarks(_timestamps())
    )
    timers = fast.key_by(lambda v: 0).connect(slow.key_by(lambda v: 0)).process(Seen())
    windows = (
        fast.connect(slow)
        .map(Both())
        .map(lambda v: (v // WINDOW_MS, 1))
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .reduce(Count())
    )
    with timers.union(windows).execute_and_collect("event time through connect") as results:
        out = list(results)

    fired = {r[1]: r[2] for r in out if r[0] == "timer"}
    assert sorted(fired) == list(range(1, N + 1))
    # Before the end of input, a timer fires only once both inputs passed its time; at the
    # end the watermark jumps to the end of time, and the last timer finds nothing beyond it.
    early = {t: passed for t, passed in fired.items() if t < N}
    assert all(passed == [True, True] for passed in early.values()), {
        t: p for t, p in early.items() if p != [True, True]
    }
    # Windows after a connect of a slow input: no record late, each window counts both inputs.
    counted = Counter({r[0]: r[1] for r in out if r[0] != "timer"})
    per_window = Counter(v // WINDOW_MS for v in range(1, N + 1))
    assert counted == Counter({w: 2 * n for w, n in per_window.items()})


@pytest.mark.parametrize(("parallelism", "backend"), [(2, "hashmap"), (3, "rocksdb")])
def test_a_savepoint_of_connect_and_broadcast_taken_before_they_had_two_inputs_restores(
    spark, tmp_path, parallelism, backend
):
    savepoint = tmp_path / "savepoint"
    shutil.copytree(GOLDEN, savepoint)  # a savepoint is relocatable
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(parallelism)
    env.configure({"state.backend.type": backend})
    env.set_restore_path(str(savepoint))
    stream = connected_upgrade.build(env, GOLDEN_EVENTS)
    with stream.execute_and_collect("connected upgrade") as results:
        out = sorted(results)

    # Every count and sum covers all events: those before the savepoint came from keyed
    # state; thresholds and prices, whose sources had ended, from broadcast and keyed state.
    assert out == connected_upgrade.expected(GOLDEN_EVENTS)
