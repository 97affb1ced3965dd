"""Each kind of window, as a whole job on Spark, against results computed here without
barrierflow: sliding and session event-time windows, count windows (tumbling and sliding),
window_all, rolling reductions, a ProcessFunction with timestamps, and processing-time timers.

One job with a branch per kind (starting a job takes seconds); every branch writes to its own
FileSink."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.datastream import OutputTag, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import (
    AggregateFunction,
    KeyedProcessFunction,
    ProcessFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from barrierflow.datastream.state import AggregatingStateDescriptor, ReducingStateDescriptor
from barrierflow.datastream.window import (
    EventTimeSessionWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
)
from tests.jobs.event_time import BOUND_MS, timestamp_of
from tests.jobs.odd_even import Throttle, read_committed

pytestmark = pytest.mark.spark

N = 3000
KEYS = 3
GAP_MS = 400


def in_session_data(v: int) -> bool:
    """Values kept for the session branch: runs of 100 values (1 s), then 1 s of silence."""
    return (v // 100) % 2 == 0


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        (total,) = elements
        return [[key, context.window().start, context.window().end, total]]


class SessionSizes(WindowFunction):
    def apply(self, key, window, inputs):
        return [[key, window.start, window.end, sorted(inputs)]]


class AllCount:
    """A ProcessAllWindowFunction: no key."""

    def process(self, context, elements):
        return [[context.window().start, len(list(elements))]]


class Stamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield [value, ctx.timestamp()]


class SumAndMean(KeyedProcessFunction):
    """A ReducingState and an AggregatingState per key: (key, running sum, running count)."""

    def open(self, runtime_context):
        self.total = runtime_context.get_reducing_state(
            ReducingStateDescriptor("total", lambda a, b: a + b)
        )
        self.count = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("count", Counting())
        )

    def process_element(self, value, ctx):
        self.total.add(value)
        self.count.add(value)
        yield [ctx.get_current_key(), self.total.get(), self.count.get()]


class Counting(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


ODD = OutputTag("odd")


class SplitOdd(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 2:
            ctx.output(ODD, (value, ctx.timestamp()))
        else:
            yield value


class SoonAfter(KeyedProcessFunction):
    """A processing-time timer per key, 50 ms after its first record."""

    def process_element(self, value, ctx):
        if value < KEYS + 1:
            now = ctx.timer_service().current_processing_time()
            ctx.timer_service().register_processing_time_timer(now + 50)

    def on_timer(self, timestamp, ctx):
        yield [ctx.get_current_key(), ctx.time_domain().name]


@pytest.fixture(scope="module")
def outputs(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("windows")
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.configure({"pipeline.auto-watermark-interval": 20})
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(BOUND_MS)
    ).with_timestamp_assigner(lambda value, _: timestamp_of(value))
    numbers = (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .map(Throttle(0.0002, None))  # runs long enough for the processing-time timers
        .assign_timestamps_and_watermarks(strategy)
    )
    keyed = numbers.key_by(lambda v: v % KEYS)

    def sink(stream, name):
        stream.sink_to(FileSink(str(base / name))).uid(f"sink-{name}")

    sink(
        keyed.window(SlidingEventTimeWindows.of(Time.seconds(1), Time.milliseconds(500)))
        .reduce(lambda a, b: a + b, WithWindow())
        .uid("sliding"),
        "sliding",
    )
    sink(
        numbers.filter(in_session_data)
        .key_by(lambda v: v % KEYS)
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP_MS)))
        .apply(SessionSizes())
        .uid("sessions"),
        "sessions",
    )
    sink(keyed.count_window(10).reduce(lambda a, b: a + b).uid("count"), "count")
    sink(
        keyed.count_window(10, 5).apply(lambda key, window, inputs: [len(inputs)]).uid("slide"),
        "count-sliding",
    )
    sink(
        numbers.window_all(TumblingEventTimeWindows.of(Time.seconds(1)))
        .process(AllCount())
        .uid("all"),
        "all",
    )
    sink(keyed.sum().uid("sum"), "sum")
    sink(numbers.process(Stamp()).uid("stamp"), "stamp")
    sink(keyed.process(SoonAfter()).uid("soon"), "processing-timers")
    sink(keyed.process(SumAndMean()).uid("sum-and-mean"), "reducing-state")
    split = numbers.process(SplitOdd()).uid("split")
    sink(split, "evens")
    sink(split.get_side_output(ODD).key_by(lambda p: p[0] % 3).map(list), "odds")
    env.execute("windows")
    return {p.name: read_committed(str(p)) for p in base.iterdir()}


def by_key(values):
    groups = defaultdict(list)
    for v in values:
        groups[v % KEYS].append(v)
    return groups


def test_sliding_windows_sum_each_value_into_every_window_it_falls_in(outputs):
    expected = Counter()
    for v in range(1, N + 1):
        ts = timestamp_of(v)
        last_start = ts - ts % 500
        for start in (last_start, last_start - 500):
            expected[(v % KEYS, start, start + 1000)] += v
    got = {(k, start, end): total for k, start, end, total in outputs["sliding"]}
    assert len(got) == len(outputs["sliding"]), "a window fired twice"
    assert got == dict(expected)


def test_session_windows_merge_records_closer_than_the_gap(outputs):
    expected = []
    for key, values in by_key(v for v in range(1, N + 1) if in_session_data(v)).items():
        session: list[int] = []
        for v in sorted(values, key=timestamp_of):
            if session and timestamp_of(v) > max(map(timestamp_of, session)) + GAP_MS:
                expected.append(_session(key, session))
                session = []
            session.append(v)
        expected.append(_session(key, session))
    assert sorted(map(tuple_of, outputs["sessions"])) == sorted(map(tuple_of, expected))


def _session(key, values):
    stamps = [timestamp_of(v) for v in values]
    return [key, min(stamps), max(stamps) + GAP_MS, sorted(values)]


def tuple_of(record):
    return tuple(tuple(x) if isinstance(x, list) else x for x in record)


def test_count_windows_fire_every_ten_records_of_a_key(outputs):
    # Which ten values share a window depends on the order the two source subtasks' records
    # reach the key; how many windows fire, and that each value counts at most once, does not.
    sums = outputs["count"]
    assert len(sums) == sum(len(vs) // 10 for vs in by_key(range(1, N + 1)).values())
    assert sum(sums) <= sum(range(1, N + 1))
    sizes = outputs["count-sliding"]
    assert len(sizes) == sum(len(vs) // 5 for vs in by_key(range(1, N + 1)).values())
    assert set(sizes) == {5, 10}, "a sliding count window holds the last ten (five at first)"
    assert sizes.count(5) == KEYS


def test_window_all_counts_every_record_once(outputs):
    expected = Counter(timestamp_of(v) - timestamp_of(v) % 1000 for v in range(1, N + 1))
    assert dict(outputs["all"]) == dict(expected)


def test_rolling_sum_emits_each_keys_running_total(outputs):
    sums = outputs["sum"]
    assert len(sums) == N
    totals = {sum(vs) for vs in by_key(range(1, N + 1)).values()}
    assert totals <= set(sums) and max(sums) == max(totals)


def test_records_carry_their_timestamps_into_a_process_function(outputs):
    assert sorted(outputs["stamp"]) == [[v, timestamp_of(v)] for v in range(1, N + 1)]


def test_processing_time_timers_fire_on_the_wall_clock(outputs):
    assert sorted(outputs["processing-timers"]) == [[k, "PROCESSING_TIME"] for k in range(KEYS)]


def test_reducing_and_aggregating_state_keep_a_running_sum_and_count_per_key(outputs):
    finals = {}
    for key, total, count in outputs["reducing-state"]:
        finals[key] = max(finals.get(key, (0, 0)), (count, total))
    assert len(outputs["reducing-state"]) == N
    assert finals == {k: (len(vs), sum(vs)) for k, vs in by_key(range(1, N + 1)).items()}


def test_a_side_output_carries_its_records_and_their_timestamps_to_its_own_consumers(outputs):
    assert sorted(outputs["evens"]) == list(range(2, N + 1, 2))
    assert sorted(outputs["odds"]) == [[v, timestamp_of(v)] for v in range(1, N + 1, 2)]
