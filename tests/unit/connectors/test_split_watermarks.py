"""Watermarks per source split: each split read by a source subtask has its own generator, the
subtask's watermark is the minimum over its active splits, an idle split is left out; readers
tell which split each record of a poll came from."""

from __future__ import annotations

from barrierflow.common import Duration, WatermarkStrategy
from barrierflow.connectors.builtin.collection_source import CollectionSource
from barrierflow.datastream.connectors.base import SourceReader, SourceReaderContext
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.record_batch import RecordBatch, SourceSplits
from barrierflow.testing.harness import OperatorHarness, operator


def assigner(strategy: WatermarkStrategy) -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.TIMESTAMPS, strategy))


def feed(h: OperatorHarness, runs, timestamps) -> None:
    h.process_batch(RecordBatch(list(range(len(timestamps))), timestamps, SourceSplits(runs, [])))


def end(h: OperatorHarness, splits) -> None:
    h.process_batch(RecordBatch([], None, SourceSplits([], splits)))


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


def reader_of(source, splits) -> SourceReader:
    """A reader given ``splits``, as its enumerator would, and told there are no more."""
    reader = source.create_reader(SourceReaderContext("job", "source", 0, 1))
    reader.add_splits(splits)
    reader.notify_no_more_splits()
    return reader


def test_readers_say_which_split_each_record_came_from():
    sequence = NumberSequenceSource(1, 10)
    reader = reader_of(sequence, sequence.splits(2))
    first = reader.poll(4)
    assert reader.split_runs() == [("to-5", 4)] and first == [1, 2, 3, 4]
    reader.poll(4)
    reader.poll(4)
    assert reader.split_runs() == [("to-10", 4)]
    collection = CollectionSource(list("abcdef"))
    reader = reader_of(collection, collection.splits(2)[1:])
    assert reader.poll(10) == ["d", "e", "f"] and reader.split_runs() == [("to-6", 3)]


def test_a_split_that_ended_stops_holding_the_watermark_back():
    h = assigner(WatermarkStrategy.for_monotonous_timestamps())
    feed(h, [("first-file", 1), ("second-file", 1)], [100, 2_000])
    assert h.operator.periodic_watermark(0) == (99, None)
    end(h, ["first-file"])
    assert h.operator.periodic_watermark(10) == (1_999, None)


def test_with_every_split_ended_the_watermark_goes_where_they_took_it_and_stays():
    h = assigner(WatermarkStrategy.for_monotonous_timestamps())
    feed(h, [("only", 2)], [100, 500])
    end(h, ["only", "never-seen"])
    assert h.operator.periodic_watermark(0) == (499, None)
    assert h.operator.periodic_watermark(10) == (None, None)
    feed(h, [("next", 1)], [900])  # a split found later takes it on
    assert h.operator.periodic_watermark(20) == (899, None)


def test_readers_say_which_splits_ended():
    sequence = NumberSequenceSource(1, 10)
    reader = reader_of(sequence, sequence.splits(2))
    reader.poll(4)
    assert reader.finished_splits() == []
    reader.poll(4)  # 5, the last of the first split
    assert reader.finished_splits() == ["to-5"]
    assert reader.finished_splits() == []  # told once
    reader.poll(10)
    assert reader.finished_splits() == ["to-10"]
    assert reader.poll(10) is None
    collection = CollectionSource(list("abc"))
    reader = reader_of(collection, collection.splits(1))
    reader.poll(2)
    assert reader.finished_splits() == []
    reader.poll(2)
    assert reader.finished_splits() == ["to-3"]


def test_a_file_reader_says_a_file_ended_once_it_read_all_of_it(tmp_path):
    from barrierflow.connectors.files.file_split import FileSplit
    from barrierflow.datastream.connectors.file_system import FileSource

    for name, lines in (("a.txt", "1\n2\n3\n"), ("b.txt", "4\n")):
        (tmp_path / name).write_text(lines)
    reader = reader_of(
        FileSource(str(tmp_path)),
        [FileSplit(str(tmp_path / name)) for name in ("a.txt", "b.txt")],
    )
    read = []
    while (batch := reader.poll(2)) is not None:
        read += batch
        ended = reader.finished_splits()
        if ended:
            read.append(("ended", [p.rsplit("/", 1)[-1] for p in ended]))
    assert read == ["1", "2", "3", ("ended", ["a.txt"]), "4", ("ended", ["b.txt"])]


def test_with_every_split_ended_the_subtask_goes_idle_after_the_idle_timeout():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_seconds(1))
    h = assigner(strategy)
    h.operator.periodic_watermark(0)
    feed(h, [("file", 1)], [100])
    assert h.operator.periodic_watermark(400) == (99, None)
    end(h, ["file"])  # at 400, as far as the operator knows the time
    assert h.operator.periodic_watermark(1_300) == (None, None)  # not yet a second
    assert h.operator.periodic_watermark(1_500) == (None, True)
    feed(h, [("next-file", 1)], [2_000])
    assert h.operator.periodic_watermark(1_700) == (1_999, False)
