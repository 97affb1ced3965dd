"""The operators of connect and broadcast, fed by a task's two-input network input: each input's
records reach their own method, keyed by their own key selector, with one keyed state and one
set of timers for both; broadcast state is read-only for the stream's records and timers,
writable for the broadcast records; a declared output type converts both inputs' outputs."""

from __future__ import annotations

import dataclasses

import pytest

from barrierflow.common import Types
from barrierflow.datastream.functions import (
    CoMapFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from barrierflow.datastream.functions.two_input import BroadcastProcess, CoMapProcess, CoProcess
from barrierflow.datastream.state import MapStateDescriptor, ValueStateDescriptor
from barrierflow.graph.transformation import TransformationKind
from barrierflow.runtime.operators import UserFunctionError
from barrierflow.testing.harness import StreamTaskHarness, operator

RULES = MapStateDescriptor("rules", Types.STRING(), Types.INT())


def two_input_task(spec, **kwargs) -> StreamTaskHarness:
    """Channel 0 is input 1, channel 1 input 2."""
    return StreamTaskHarness([spec], num_input_channels=2, input_of_channel=(0, 1), **kwargs)


class Price(KeyedCoProcessFunction):
    """Orders (product, quantity) on input 1, prices {"product": p, "price": x} on input 2."""

    def open(self, runtime_context):
        self.price = runtime_context.get_state(ValueStateDescriptor("price"))

    def process_element1(self, order, ctx):
        yield ctx.get_current_key(), order[1] * self.price.value(), ctx.timestamp()
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)

    def process_element2(self, price, ctx):
        self.price.update(price["price"])

    def on_timer(self, timestamp, ctx):
        yield ctx.get_current_key(), "timer", timestamp


def test_each_input_has_its_key_selector_and_both_share_the_keyed_state_and_timers():
    spec = operator(
        TransformationKind.CO_PROCESS,
        CoProcess(Price()),
        key_selector=lambda order: order[0],
        key_selector2=lambda price: price["product"],
    )
    h = two_input_task(spec).open()
    h.timed_records(1, [{"product": "fig", "price": 3}, {"product": "pear", "price": 5}], [1, 2])
    h.run_until_idle()
    h.timed_records(0, [("pear", 2), ("fig", 4)], [20, 30])
    h.run_until_idle()
    assert h.output_records() == [("pear", 10, 20), ("fig", 12, 30)]
    assert h.output_timestamps() == [20, 30]
    h.watermark(0, 35)
    h.watermark(1, 35)
    h.run_until_idle()
    assert h.output_records()[2:] == [("pear", "timer", 30)]  # fig's, at 40, is still due
    h.close()


class Judge(KeyedBroadcastProcessFunction):
    def process_element(self, event, ctx):
        rules = ctx.get_broadcast_state(RULES)
        if event[1] == "change the rules":
            rules.put(event[0], 0)
        ctx.timer_service().register_event_time_timer(5)
        yield event[0], event[1] > rules.get(event[0])

    def process_broadcast_element(self, rule, ctx):
        assert ctx.get_current_key() is None  # a broadcast record is no key's
        ctx.get_broadcast_state(RULES).put(*rule)

    def on_timer(self, timestamp, ctx):
        yield (
            ctx.get_current_key(),
            "limit",
            ctx.get_broadcast_state(RULES).get(ctx.get_current_key()),
        )


def broadcast_task(**kwargs) -> StreamTaskHarness:
    spec = operator(
        TransformationKind.BROADCAST_PROCESS,
        BroadcastProcess(Judge(), ("rules",)),
        uid="judge",
        key_selector=lambda event: event[0],
    )
    return two_input_task(spec, **kwargs)


def test_broadcast_state_is_written_by_broadcast_records_and_read_by_the_others():
    h = broadcast_task().open()
    h.records(1, [("a", 10), ("b", 20)])
    h.run_until_idle()
    h.records(0, [("a", 15), ("b", 15)])
    h.watermark(0, 5)
    h.watermark(1, 5)
    h.run_until_idle()
    assert h.output_records() == [("a", True), ("b", False), ("a", "limit", 10), ("b", "limit", 20)]
    h.close()


def test_the_streams_records_cannot_change_broadcast_state_and_the_error_names_the_record():
    h = broadcast_task().open()
    h.records(0, [("a", "change the rules")])
    with pytest.raises(UserFunctionError, match=r"'change the rules'.*read-only"):
        h.run_until_idle()
    h.close()


def test_broadcast_state_is_in_the_snapshot_and_comes_back_with_the_keyed_state():
    h = broadcast_task().open()
    h.records(1, [("a", 10)])
    h.run_until_idle()
    h.records(0, [("a", 1)])  # registers a timer at 5: keyed state
    h.barrier(0, 1)
    h.barrier(1, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    restored = h.restored(ack).open()
    restored.records(0, [("a", 11)])
    restored.watermark(0, 5)
    restored.watermark(1, 5)
    restored.run_until_idle()
    assert restored.output_records() == [("a", True), ("a", "limit", 10)]
    restored.close()
    h.close()


class Describe(CoMapFunction):
    def map1(self, value):
        return value * 2

    def map2(self, value):
        return str(value)


def test_a_declared_output_type_converts_the_outputs_of_both_inputs():
    spec = operator(TransformationKind.CO_PROCESS, CoMapProcess(Describe()))
    typed = two_input_task(dataclasses.replace(spec, output_type=Types.STRING())).open()
    typed.records(1, [7])
    typed.run_until_idle()
    assert typed.output_records() == ["7"]
    typed.records(0, [7])
    with pytest.raises(UserFunctionError, match="14"):  # an int where STRING was declared
        typed.run_until_idle()
    typed.close()
