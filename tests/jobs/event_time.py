"""Event-time jobs with injected faults, and what a failure-free run computes, worked out here
without barrierflow: a tumbling event-time window and a KeyedProcessFunction that does the same
with event-time timers (per key and second: the count and the sum of the values).

The values 1..n get out-of-order event timestamps (``timestamp_of``), at most ``DISORDER_MS``
behind the highest one seen so far, below the watermark bound: no record is late, so every value
counts once in its window. Shipped to Spark workers by value (cloudpickle).
"""

from __future__ import annotations

from collections import Counter

import cloudpickle

from barrierflow.common import Duration, RestartStrategies, Time, WatermarkStrategy
from barrierflow.datastream import (
    AggregateFunction,
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import MapStateDescriptor
from barrierflow.datastream.window import TumblingEventTimeWindows
from tests.jobs.odd_even import Fault, Throttle

KEYS = 5
WINDOW_MS = 1000
DISORDER_MS = 78
BOUND_MS = 100


def timestamp_of(value: int) -> int:
    return value * 10 - (value % 7) * 13


def key_of(value: int) -> int:
    return value % KEYS


def expected(n: int) -> Counter:
    """(key, window start, count, sum) of each window: the multiset a correct run commits."""
    windows: dict[tuple[int, int], list[int]] = {}
    for v in range(1, n + 1):
        ts = timestamp_of(v)
        start = ts - ts % WINDOW_MS
        count_sum = windows.setdefault((key_of(v), start), [0, 0])
        count_sum[0] += 1
        count_sum[1] += v
    return Counter((k, start, c, s) for (k, start), (c, s) in windows.items())


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + 1, accumulator[1] + value)

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return (acc_a[0] + acc_b[0], acc_a[1] + acc_b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        ((count, total),) = elements
        return [[key, context.window().start, count, total]]


class PerSecondByTimers(KeyedProcessFunction):
    """The window by hand: a map state of second -> (count, sum), a timer at each second's end."""

    def open(self, runtime_context):
        self.seconds = runtime_context.get_map_state(MapStateDescriptor("seconds"))

    def process_element(self, value, ctx):
        start = ctx.timestamp() - ctx.timestamp() % WINDOW_MS
        count, total = self.seconds.get(start) or (0, 0)
        self.seconds.put(start, (count + 1, total + value))
        ctx.timer_service().register_event_time_timer(start + WINDOW_MS - 1)

    def on_timer(self, timestamp, ctx):
        start = timestamp + 1 - WINDOW_MS
        count, total = self.seconds.get(start)
        self.seconds.remove(start)
        yield [ctx.get_current_key(), start, count, total]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    kind: str,
    n: int,
    out_dir: str,
    checkpoint_dir: str,
    fault: Fault | None = None,
    state_backend: str = "hashmap",
    delay_s: float = 0.0003,
    restarts: int = 3,
) -> StreamExecutionEnvironment:
    """``kind``: "window" or "timers"."""
    env.configure({"state.backend.type": state_backend, "pipeline.auto-watermark-interval": 50})
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(
        RestartStrategies.fixed_delay_restart(restarts, 200)
        if restarts
        else RestartStrategies.no_restart()
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(BOUND_MS)
    ).with_timestamp_assigner(lambda value, _: timestamp_of(value))
    stream = (
        env.from_source(NumberSequenceSource(1, n), "numbers")
        .map(Throttle(delay_s, fault))
        .uid("throttle")
        .assign_timestamps_and_watermarks(strategy)
        .key_by(key_of)
    )
    if kind == "window":
        results = (
            stream.window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
            .aggregate(CountAndSum(), WithWindow())
            .uid("window")
        )
    else:
        results = stream.process(PerSecondByTimers()).uid("timers")
    results.sink_to(FileSink(out_dir)).uid("sink")
    return env


def committed(out_dir: str) -> Counter:
    from tests.jobs.odd_even import read_committed

    return Counter(tuple(r) for r in read_committed(out_dir))
