"""Async I/O in a StreamTask, driven in-process: results reach the chain through the mailbox,
the task takes barriers while calls are in flight (their records go into the snapshot and are
called again by the restored task), a full operator stops the task taking input, and a
watermark leaves behind the records that preceded it."""

from __future__ import annotations

import time

import pytest

from barrierflow.common import Time
from barrierflow.datastream.functions.async_io import NO_RETRY_STRATEGY, AsyncFunctionDescriptor
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.frames import Kind
from barrierflow.testing.harness import StreamTaskHarness, operator
from tests.unit.runtime.test_async_wait_operator import (
    OPEN,
    STARTED,
    Gated,
    release,
    started,
)

Mode = AsyncFunctionDescriptor.OutputMode


@pytest.fixture(autouse=True)
def _reset():
    OPEN.clear()
    STARTED.clear()


def async_task(capacity=100, mode=Mode.UNORDERED, **settings) -> StreamTaskHarness:
    descriptor = AsyncFunctionDescriptor(
        Gated(), Time.seconds(0), capacity, NO_RETRY_STRATEGY, mode
    )
    spec = operator(TransformationKind.ASYNC_WAIT, descriptor, uid="enrich")
    return StreamTaskHarness([spec], **settings)


def turn_until(h: StreamTaskHarness, done, wait_s: float = 10.0) -> None:
    deadline = time.monotonic() + wait_s
    while not done():
        assert time.monotonic() < deadline, "the task did not get there"
        h.turns(1)


def test_results_reach_the_output_through_the_mailbox():
    h = async_task().open()
    h.records(0, ["a", "b"])
    h.run_until_idle()
    started(2)
    assert h.output_records() == []
    release("a", "b")
    turn_until(h, lambda: len(h.output_records()) == 2)
    assert sorted(h.output_records()) == [("a", "done"), ("b", "done")]
    h.close()


def test_a_barrier_is_taken_while_calls_are_in_flight_and_the_restore_calls_them_again():
    h = async_task(mode=Mode.ORDERED).open()
    h.records(0, ["a"])
    release("a")
    turn_until(h, lambda: h.output_records() == [("a", "done")])
    h.records(0, ["b", "c"])
    h.barrier(0, 1)
    turn_until(h, lambda: h.acknowledgements())
    assert STARTED["b"] == 1 and STARTED["c"] == 1
    assert [e.kind for e in h.emitted()] == [Kind.BUFFER, Kind.BARRIER]
    release("b")  # completes after the barrier: its output belongs to the next checkpoint
    turn_until(h, lambda: len(h.output_records()) == 2)
    ack = h.acknowledgements()[0]
    h.close()

    STARTED.clear()
    restored = h.restored(ack).open()
    release("c")
    turn_until(restored, lambda: len(restored.output_records()) == 2)
    assert restored.output_records() == [("b", "done"), ("c", "done")]
    assert dict(STARTED) == {"b": 1, "c": 1}  # "a" was emitted before the barrier
    restored.close()


def test_a_full_operator_stops_the_task_taking_input_until_a_call_completes():
    h = async_task(capacity=1, initial_credit=1).open()
    h.credits_returned()
    h.records(0, ["a"])
    h.records(0, ["b"])
    h.turns(20)
    started(1)
    assert STARTED["b"] == 0  # the second buffer waits in the gate
    assert h.task.chain.backlogged()
    release("a")
    turn_until(h, lambda: STARTED["b"] == 1)
    release("b")
    turn_until(h, lambda: len(h.output_records()) == 2)
    assert h.output_records() == [("a", "done"), ("b", "done")]
    h.close()


def test_a_watermark_leaves_the_task_after_the_results_of_the_records_before_it():
    h = async_task().open()
    h.timed_records(0, ["a"], [5])
    h.watermark(0, 7)
    h.timed_records(0, ["b"], [9])
    h.run_until_idle()
    started(2)
    release("b")
    h.run_until_idle()
    assert h.output_watermarks() == [] and h.output_records() == []
    release("a")
    turn_until(h, lambda: len(h.output_records()) == 2)
    order = [
        e.watermark if e.kind == Kind.WATERMARK else e.records
        for e in h.emitted()
        if e.kind in (Kind.WATERMARK, Kind.BUFFER)
    ]
    assert order == [[("a", "done")], 7, [("b", "done")]]
    assert h.output_timestamps() == [5, 9]
    h.close()
