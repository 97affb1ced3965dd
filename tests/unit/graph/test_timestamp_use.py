"""Which operators need their input's timestamps: decided from the graph and, for functions,
from whether their code can reach the timestamp at all. Dropping is only ever safe: anything
that cannot be shown to ignore the timestamps keeps them."""

from __future__ import annotations

import functools

from barrierflow.api.async_data_stream import AsyncDataStream
from barrierflow.common import Duration, Time, WatermarkStrategy
from barrierflow.common.watermark_strategy import TimestampAssigner
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.async_io import AsyncFunction
from barrierflow.datastream.functions.one_input import KeyedProcessFunction, ProcessFunction
from barrierflow.datastream.functions.two_input import CoMapFunction, KeyedCoProcessFunction
from barrierflow.datastream.window import TumblingEventTimeWindows
from barrierflow.graph.execution_graph import build_execution_graph
from barrierflow.graph.job_graph import build_job_graph
from barrierflow.graph.timestamp_use import TimestampColumn, may_use_argument
from barrierflow.graph.transformation import TransformationKind
from tests.unit.graph.test_graph import stream_graph

NEEDED, DROPPED = TimestampColumn.NEEDED, TimestampColumn.DROPPED


class Count(KeyedProcessFunction):
    def process_element(self, value, ctx):
        return ((value, 1),)


class Stamp(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value, ctx.timestamp()


class Hands(ProcessFunction):
    """Passes its context on: whatever it calls may read the timestamp."""

    def process_element(self, value, ctx):
        return [describe(value, ctx)]


def describe(value, ctx):
    return value, ctx.timestamp()


class Closure(ProcessFunction):
    def process_element(self, value, ctx):
        return [(lambda: ctx.timestamp())()]


class Framed(ProcessFunction):
    def process_element(self, value, ctx):
        return [locals()]


def test_code_that_never_loads_the_argument_does_not_use_it():
    assert not may_use_argument(lambda value, _: value, 1)
    assert may_use_argument(lambda value, previous: previous, 1)
    assert not may_use_argument(Count().process_element, 1)
    assert may_use_argument(Stamp().process_element, 1)


def test_whatever_could_reach_the_argument_otherwise_counts_as_using_it():
    assert may_use_argument(Hands().process_element, 1)  # handed on
    assert may_use_argument(Closure().process_element, 1)  # captured by an inner function
    assert may_use_argument(Framed().process_element, 1)  # locals()
    assert may_use_argument(lambda *args: args[0], 1)  # *args
    assert may_use_argument(functools.partial(describe, 1), 0)  # not code we can read
    assert may_use_argument(max, 1)  # a builtin


class Assigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


class Callable:
    def __call__(self, value, ctx):
        return value


def test_a_callable_object_and_a_timestamp_assigner_are_read_as_their_methods():
    assert not may_use_argument(Assigner().extract_timestamp, 1)
    assert not may_use_argument(Callable(), 1)
    assert may_use_argument(Callable(), 2)  # no such parameter


def keyed_count_inputs(function, assigner=lambda i, _: i) -> dict[str, TimestampColumn]:
    """The keyed count of bench/keyed_count.py with event time: each node's input column."""
    env = StreamExecutionEnvironment().set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(assigner)
    (
        env.from_source(NumberSequenceSource(0, 9), "events")
        .assign_timestamps_and_watermarks(strategy)
        .map(lambda i: i % 3)
        .key_by(lambda k: k)
        .process(function)
        .sink_to(DiscardingSink())
    )
    return {n.name: n.input_timestamps for n in stream_graph(env).nodes}


def test_a_function_that_never_looks_at_its_context_needs_no_timestamps_after_the_shuffle():
    inputs = keyed_count_inputs(Count())
    assert inputs == {
        "events": DROPPED,  # nothing before the assigner has event time anyway
        "Timestamps/Watermarks": DROPPED,  # its assigner ignores the record's timestamp
        "Map": DROPPED,
        "Count": DROPPED,
        "DiscardingSink": DROPPED,
    }


def test_a_function_that_may_read_its_context_gets_them_and_so_does_what_feeds_it():
    inputs = keyed_count_inputs(Stamp())
    assert inputs["Stamp"] is NEEDED and inputs["Map"] is NEEDED
    assert inputs["Timestamps/Watermarks"] is DROPPED  # it makes them, it does not read them
    previous = keyed_count_inputs(Count(), lambda i, previous: previous + i)
    assert previous["Timestamps/Watermarks"] is NEEDED and previous["Map"] is DROPPED


def test_a_window_downstream_keeps_them_through_functions_that_carry_them():
    env = StreamExecutionEnvironment().set_parallelism(2)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5))
    events = env.from_source(NumberSequenceSource(0, 9), "events").assign_timestamps_and_watermarks(
        strategy.with_timestamp_assigner(lambda i, _: i)
    )
    (
        events.key_by(lambda v: v % 2)
        .process(Count())
        .key_by(lambda pair: pair[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        .reduce(lambda a, b: a)
        .sink_to(DiscardingSink())
    )
    graph = stream_graph(env)
    inputs = {n.name: n.input_timestamps for n in graph.nodes}
    assert inputs["Count"] is NEEDED  # its outputs carry its inputs' timestamps to the window
    job_graph = build_job_graph(graph)
    plans = build_execution_graph(job_graph).subtasks
    edges = {o.edge: o.timestamps for p in plans for o in p.outputs}
    assert set(edges.values()) == {NEEDED}


class Join(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        yield value

    def process_element2(self, value, ctx):
        yield value, ctx.timestamp()


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return value


def test_a_two_input_operator_needs_them_if_either_input_method_may_read_them():
    env = StreamExecutionEnvironment()
    a, b = env.from_collection([1]), env.from_collection([2])
    a.key_by(lambda v: v).connect(b.key_by(lambda v: v)).process(Join()).sink_to(DiscardingSink())
    a.connect(b).map(Both()).sink_to(DiscardingSink())
    inputs = {n.name: n.input_timestamps for n in stream_graph(env).nodes}
    assert inputs["Join"] is NEEDED and inputs["Both"] is DROPPED


class Echo(AsyncFunction):
    async def async_invoke(self, value):
        return [value]


def test_async_io_carries_them_to_a_window_after_it():
    env = StreamExecutionEnvironment().set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda i, _: i)
    events = env.from_source(NumberSequenceSource(0, 9), "events").assign_timestamps_and_watermarks(
        strategy
    )
    (
        AsyncDataStream.unordered_wait(events, Echo(), Duration.of_seconds(1))
        .key_by(lambda v: v % 2)
        .window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
        .reduce(lambda a, b: a)
        .sink_to(DiscardingSink())
    )
    waits = [n for n in stream_graph(env).nodes if n.kind is TransformationKind.ASYNC_WAIT]
    assert [n.input_timestamps for n in waits] == [NEEDED]
