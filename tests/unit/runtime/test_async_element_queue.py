"""The async operator's element queue alone: capacity, the order of outputs in both modes,
watermarks behind their records, and what a checkpoint keeps."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.async_element_queue import ElementQueue, OutputOrder


def emitted(items):
    """Records and watermarks in emission order, a batch's records one by one."""
    out = []
    for item in items:
        if type(item) is RecordBatch:
            out.extend(item.values)
        else:
            out.append(("W", item))
    return out


def test_queue_starts_records_up_to_its_capacity_and_the_rest_when_room_frees():
    queue = ElementQueue(2, OutputOrder.UNORDERED)
    elements = [queue.add_record(i, None) for i in range(3)]
    assert queue.to_start() == elements[:2]
    assert queue.full
    assert queue.to_start() == []
    queue.complete(elements[1], ["b"])
    assert emitted(queue.ready()) == ["b"]
    assert queue.to_start() == [elements[2]]
    assert queue.full  # 0 and 2 in flight
    queue.complete(elements[0], ["a"])
    assert emitted(queue.ready()) == ["a"]
    assert not queue.full


def test_ordered_queue_emits_in_arrival_order_whatever_completes_first():
    queue = ElementQueue(10, OutputOrder.ORDERED)
    elements = [queue.add_record(i, None) for i in range(3)]
    queue.to_start()
    queue.complete(elements[2], [20])
    queue.complete(elements[1], [10, 11])
    assert queue.ready() == []
    queue.complete(elements[0], [0])
    assert emitted(queue.ready()) == [0, 10, 11, 20]
    assert len(queue) == 0


def test_unordered_queue_emits_in_completion_order_within_a_segment():
    queue = ElementQueue(10, OutputOrder.UNORDERED)
    elements = [queue.add_record(i, None) for i in range(3)]
    queue.to_start()
    queue.complete(elements[2], [2])
    queue.complete(elements[0], [0])
    assert emitted(queue.ready()) == [2, 0]


@pytest.mark.parametrize("order", list(OutputOrder))
def test_a_watermark_waits_for_the_records_before_it_and_holds_back_those_after(order):
    queue = ElementQueue(10, order)
    before = queue.add_record("a", 5)
    queue.add_watermark(7)
    after = queue.add_record("b", 9)
    queue.to_start()
    queue.complete(after, ["B"])
    assert queue.ready() == []  # "b" may not overtake the watermark, which waits for "a"
    assert queue.holds_watermarks
    queue.complete(before, ["A"])
    assert emitted(queue.ready()) == ["A", ("W", 7), "B"]
    assert not queue.holds_watermarks


def test_a_watermark_with_nothing_before_it_is_ready_at_once():
    queue = ElementQueue(1, OutputOrder.UNORDERED)
    queue.add_watermark(3)
    assert queue.ready() == [3]


def test_outputs_carry_their_input_timestamp_and_batches_split_at_watermarks():
    queue = ElementQueue(10, OutputOrder.ORDERED)
    first = queue.add_record("a", 1)
    queue.add_watermark(1)
    second = queue.add_record("b", 2)
    queue.to_start()
    queue.complete(first, ["a1", "a2"])
    queue.complete(second, ["b1"])
    assert queue.ready() == [RecordBatch(["a1", "a2"], [1, 1]), 1, RecordBatch(["b1"], [2])]


def test_pending_lists_started_and_waiting_records_in_arrival_order():
    queue = ElementQueue(2, OutputOrder.UNORDERED)
    elements = [queue.add_record(i, i * 10) for i in range(4)]
    queue.to_start()
    queue.complete(elements[1], ["done"])  # completed but not emitted: still pending
    assert [e.record for e in queue.pending()] == [0, 1, 2, 3]
    queue.ready()
    assert [(e.record, e.timestamp) for e in queue.pending()] == [(0, 0), (2, 20), (3, 30)]


def test_a_call_completing_twice_is_refused():
    queue = ElementQueue(1, OutputOrder.ORDERED)
    element = queue.add_record("x", None)
    queue.to_start()
    queue.complete(element, [1])
    with pytest.raises(ValueError, match="completed twice"):
        queue.complete(element, [1])


@pytest.mark.parametrize("capacity", [0, -1, True, 1.5])
def test_a_capacity_below_one_is_refused(capacity):
    with pytest.raises(ValueError, match="capacity"):
        ElementQueue(capacity, OutputOrder.ORDERED)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 5), st.just(None)), min_size=1, max_size=40),
    st.integers(1, 6),
    st.sampled_from(list(OutputOrder)),
    st.randoms(use_true_random=False),
)
def test_every_record_leaves_once_and_never_crosses_a_watermark(script, capacity, order, rnd):
    """A stream of records (int: its number of outputs) and watermarks (None), completed in a
    random order as capacity allows: each record's outputs leave exactly once; ordered mode
    keeps arrival order; no output crosses a watermark in either direction."""
    queue = ElementQueue(capacity, order)
    marks = 0
    expected = []
    for i, item in enumerate(script):
        if item is None:
            marks += 1
            queue.add_watermark(marks)
            expected.append(("W", marks))
        else:
            queue.add_record(i, None)
            expected.extend((i, k, marks) for k in range(item))
    out = []
    running = []
    rng = random.Random(rnd.random())
    while True:
        running.extend(queue.to_start())
        assert len(running) <= capacity
        if not running:
            break
        element = running.pop(rng.randrange(len(running)))
        n = script[element.record]
        queue.complete(element, [(element.record, k) for k in range(n)])
        for item in queue.ready():
            if type(item) is int:
                out.append(("W", item))
            else:
                out.extend((r, k, sum(1 for o in out if o[0] == "W")) for r, k in item.values)
        running = [e for e in running if not e.done]
    out.extend(("W", w) for w in queue.ready())  # watermarks after the last record
    assert len(queue) == 0
    assert sorted(map(str, out)) == sorted(map(str, expected))
    assert [o for o in out if o[0] == "W"] == [e for e in expected if e[0] == "W"]
    if order is OutputOrder.ORDERED:
        assert [o for o in out if o[0] != "W"] == [e for e in expected if e[0] != "W"]
