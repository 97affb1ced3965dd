"""Buffer debloating in a running task, in-process (``StreamTaskHarness``): a slow consumer
announces buffers smaller than the configured size to its producers, and its
``debloatedBufferSize`` metric says so (the configured size without debloating, none for a
source task); a producer, a source task included, fills its buffers to the size its consumer
announced.

The assertions are on sizes, never on times: the slow operator sleeps, which only bounds its
throughput from above (a loaded machine makes it slower, and the sizes smaller still)."""

from __future__ import annotations

import time

from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.frames import Kind
from barrierflow.runtime.network.buffer_debloater import DebloatSettings
from barrierflow.testing.harness import StreamTaskHarness, operator

# Quick to react: no smoothing, every change announced, a period of 20 ms.
QUICK = DebloatSettings(
    target_ms=100, period_ms=20, samples=1, threshold_percentages=0, max_size=1024, min_size=2
)


def slow(record: int) -> int:
    time.sleep(0.001)  # at most 1,000 records a second
    return record


def test_a_slow_consumer_announces_smaller_buffers_to_its_producer():
    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, slow)], initial_credit=2, buffer_debloat=QUICK
    ).open()
    for start in range(0, 400, 20):
        h.records(0, list(range(start, start + 20)))
        h.turns(1)
    sizes = h.announced_buffer_sizes()[0]
    # at most 1,000 records/s * 100 ms over 4 buffers in flight (2 credited, 2 more): 25
    assert sizes and max(sizes) <= 25 and min(sizes) >= QUICK.min_size
    assert h.output_records() == list(range(400))
    sample = h.task.metrics.sample()
    assert sample is not None and sample.debloated_buffer_size == sizes[-1]  # the gauge
    h.close()


def test_the_debloated_buffer_size_gauge_is_the_configured_size_without_debloating():
    h = StreamTaskHarness([operator(TransformationKind.MAP, slow)], initial_credit=2).open()
    for start in range(0, 100, 20):
        h.records(0, list(range(start, start + 20)))
        h.turns(1)
    sample = h.task.metrics.sample()
    assert h.announced_buffer_sizes() == {}
    assert sample is not None and sample.debloated_buffer_size == h.descriptor.config.buffer_size
    h.close()


def test_a_fast_consumer_announces_nothing():
    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, lambda x: x)], buffer_debloat=QUICK
    ).open()
    for start in range(0, 200_000, 1000):
        h.records(0, list(range(start, start + 1000)))
        h.turns(1)
    assert h.announced_buffer_sizes().get(0, []) in ([], [1024])
    h.close()


def test_a_task_fills_its_buffers_to_the_size_its_consumer_announced():
    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, lambda x: x)], buffer_debloat=QUICK
    ).open()
    h.records(0, [0])
    h.turns(1)  # says HELLO, is granted credit, sends [0]
    h.announce_output_buffer_size(5)
    h.turns(1)  # takes the announcement with its flush
    h.records(0, list(range(1, 24)))
    h.turns(1)
    buffers = [e.records for e in h.emitted() if e.kind == Kind.BUFFER]
    assert buffers == [[0], [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15],
                       [16, 17, 18, 19, 20], [21, 22, 23]]  # fmt: skip
    h.close()


def test_a_source_polls_no_more_than_its_consumer_asked_a_buffer_to_hold():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 30), uid="numbers")
    h = StreamTaskHarness([source], num_input_channels=0, buffer_debloat=QUICK).open()
    h.announce_output_buffer_size(7)  # its output channel said HELLO when it opened
    while not h.output_records():
        h.turns(1)
    assert h.output_records() == list(range(1, 8))  # one poll: 7 records, not 30
    h.run_until_idle()
    buffers = [e.records for e in h.emitted() if e.kind == Kind.BUFFER]
    assert [len(b) for b in buffers] == [7, 7, 7, 7, 2]  # 1,024 a poll without debloating
    assert [r for b in buffers for r in b] == list(range(1, 31))
    sample = h.task.metrics.sample()
    assert sample is not None and sample.debloated_buffer_size is None  # no input gate
    h.close()
