"""Watermarks per source split: each split read by a source subtask has its own generator, the
subtask's watermark is the minimum over its active splits, an idle split is left out; readers
tell which split each record of a poll came from."""

from __future__ import annotations

from barrierflow.common import Duration, WatermarkStrategy
from barrierflow.connectors import SequenceSource
from barrierflow.connectors.collection_source import CollectionSource
from barrierflow.connectors.source import SourceReaderContext
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


def assigner(strategy: WatermarkStrategy) -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.TIMESTAMPS, strategy))


def feed(h: OperatorHarness, runs, timestamps) -> None:
    h.operator.split_runs = runs
    h.process_timed(list(range(len(timestamps))), timestamps)


def test_the_slowest_split_holds_the_watermark_back():
    h = assigner(WatermarkStrategy.for_monotonous_timestamps())
    feed(h, [("fast", 2), ("slow", 1)], [1_000, 2_000, 50])
    assert h.operator.periodic_watermark(0) == (49, None)
    feed(h, [("slow", 2)], [60, 3_000])
    assert h.operator.periodic_watermark(10) == (1_999, None)


def test_an_idle_split_is_left_out_and_all_idle_make_the_subtask_idle():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(1))
    h = assigner(strategy)
    op = h.operator
    op.periodic_watermark(0)
    feed(h, [("a", 1), ("b", 1)], [500, 100])
    assert op.periodic_watermark(600) == (99, None)
    feed(h, [("a", 1)], [900])
    assert op.periodic_watermark(1_200) == (899, None)  # b had nothing for 1.2 s: idle
    assert op.periodic_watermark(2_000) == (None, True)  # and now a too
    feed(h, [("b", 1)], [950])
    assert op.periodic_watermark(2_100) == (949, False)


def test_without_splits_one_generator_serves_the_subtask():
    h = assigner(WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10)))
    h.process_timed([1, 2], [100, 300])
    assert h.operator.periodic_watermark(0) == (289, None)


def test_readers_say_which_split_each_record_came_from():
    context = SourceReaderContext("job", "source", 0, 1)
    sequence = SequenceSource(1, 10)
    reader = sequence.create_reader(
        sequence.initial_splits(0, 2) + sequence.initial_splits(1, 2), context
    )
    first = reader.poll(4)
    assert reader.last_poll_splits() == [("to-5", 4)] and first == [1, 2, 3, 4]
    reader.poll(4)
    reader.poll(4)
    assert reader.last_poll_splits() == [("to-10", 4)]
    collection = CollectionSource(list("abcdef"))
    reader = collection.create_reader(collection.initial_splits(1, 2), context)
    assert reader.poll(10) == ["d", "e", "f"] and reader.last_poll_splits() == [("to-6", 3)]
