"""What a StreamTask counts for the JobMaster's metrics, driven in-process by the harness:
records in and out per buffer, time waiting for output credit as back-pressured, and a sample
that stops growing once the task ended."""

from __future__ import annotations

import time

from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import StreamTaskHarness, operator


def doubled():
    return operator(TransformationKind.FLAT_MAP, lambda v: (v, v), uid="double")


def test_records_in_and_out_are_counted_and_sent_as_one_sample():
    harness = StreamTaskHarness([doubled()], num_input_channels=2).open()
    assert harness.task.metrics.records_in == 0
    harness.records(0, [1, 2, 3])
    harness.records(1, [4])
    harness.run_until_idle()
    sample = harness.task.metrics.sample()
    assert (sample.vertex, sample.subtask) == ("v0", 0)
    assert (sample.records_in, sample.records_out) == (4, 8)
    assert sample.busy_ms >= 0 and sample.idle_ms >= 0 and sample.backpressured_ms == 0


def test_a_task_without_output_credit_counts_its_waits_as_back_pressured():
    harness = StreamTaskHarness([doubled()], output_credit=0).open()
    harness.records(0, list(range(10)))
    harness.turns(3)  # the buffer cannot go out: every turn waits for credit
    backpressured = harness.task.metrics.backpressured_ns
    assert backpressured > 0
    harness.grant_output_credit(10)
    harness.run_until_idle()
    assert harness.task.metrics.backpressured_ns >= backpressured
    assert harness.task.metrics.sample().records_out == 20


def test_a_sample_before_the_task_runs_is_none_and_after_it_ended_stops_growing():
    harness = StreamTaskHarness([doubled()])
    assert harness.task.metrics.sample() is None
    harness.open()
    harness.task.metrics.stop()
    first = harness.task.metrics.sample()
    second = harness.task.metrics.sample()
    assert first.busy_ms == second.busy_ms


def test_the_first_record_taken_in_is_timed_once_and_sent_with_every_sample():
    harness = StreamTaskHarness([doubled()]).open()
    assert harness.task.metrics.sample().first_record_at is None
    before = time.time()
    harness.records(0, [1])
    harness.run_until_idle()
    first = harness.task.metrics.sample().first_record_at
    harness.records(0, [2])
    harness.run_until_idle()

    assert first is not None and first >= before
    assert harness.task.metrics.sample().first_record_at == first
