"""Records sent to the driver: the collection source's splits and their restore, the collect
sink's batches, and the driver's collectors (each delivery once; PyFlink's print format)."""

from __future__ import annotations

import io
import pickle

import pytest

from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import PrintCollector, QueueCollector
from barrierflow.connectors.collect_sink import BATCH, CollectSink
from barrierflow.connectors.collection_source import CollectionSource
from barrierflow.connectors.sink import SinkWriterContext
from barrierflow.connectors.source import SourceReaderContext
from barrierflow.control.messages import CollectedRecords


def read_all(reader, batch=3):
    out = []
    while (records := reader.poll(batch)) is not None:
        out += records
    return out


def test_a_collection_is_split_over_the_subtasks_and_each_value_read_once():
    values = [f"v{i}" for i in range(10)]
    source = CollectionSource(values)
    read = []
    for subtask in range(3):
        ctx = SourceReaderContext("job", "src", subtask, 3)
        read += read_all(source.create_reader(source.initial_splits(subtask, 3), ctx))
    assert read == values


@pytest.mark.parametrize("new_parallelism", [1, 2, 4])
def test_a_restored_position_rewinds_exactly_to_the_unread_values(new_parallelism):
    values = list(range(23))
    source = CollectionSource(values)
    snapshots, read_before = [], []
    for subtask in range(2):
        reader = source.create_reader(
            source.initial_splits(subtask, 2), SourceReaderContext("j", "s", subtask, 2)
        )
        read_before += reader.poll(4)
        snapshots += reader.snapshot()
    # Split state: each restored split goes to one new subtask (round robin, as the runtime does).
    read_after = []
    for subtask in range(new_parallelism):
        mine = snapshots[subtask::new_parallelism]
        reader = source.create_reader(mine, SourceReaderContext("j", "s", subtask, 1))
        read_after += read_all(reader)
    assert sorted(read_before + read_after) == values


def test_a_collection_must_be_a_collection():
    with pytest.raises(TypeError, match="from_collection"):
        CollectionSource("abc")
    with pytest.raises(TypeError, match="from_collection"):
        CollectionSource(42)


def message(collector, delivery, records, subtask=0, parallelism=1):
    return CollectedRecords(
        1, 7, collector.id, delivery, subtask, parallelism, pickle.dumps(records)
    )


def test_a_delivery_sent_again_after_a_recovery_is_taken_once():
    collector = QueueCollector()
    collector.accept(message(collector, "0/3/0", ["a", "b"]))
    collector.accept(message(collector, "0/3/0", ["a", "b"]))  # a recovery's resend
    collector.accept(message(collector, "1/3/0", ["c"]))
    taken = []
    while not collector.records.empty():
        taken.append(collector.records.get())
    assert taken == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("identifier", "parallelism", "line"),
    [(None, 1, "(1, 'x')"), (None, 2, "2> (1, 'x')"), ("out", 1, "out> (1, 'x')"),
     ("out", 3, "out:2> (1, 'x')")],
)  # fmt: skip
def test_print_writes_lines_as_pyflink_does(identifier, parallelism, line):
    out = io.StringIO()
    collector = PrintCollector(identifier, out=out)
    collector.accept(message(collector, "d", [(1, "x")], subtask=1, parallelism=parallelism))
    assert out.getvalue() == line + "\n"


def test_records_of_an_unknown_collector_are_dropped_and_known_ones_delivered():
    collector = QueueCollector()
    collected_records.register(collector)
    try:
        collected_records.deliver(message(collector, "d", [1]))
        other = QueueCollector()  # never registered
        collected_records.deliver(message(other, "d", [2]))
        assert collector.records.get_nowait() == 1 and other.records.empty()
    finally:
        collected_records.unregister(collector.id)


def writer_context(sent, checkpointing=True, subtask=0):
    return SinkWriterContext(
        "job", "job", "sink", subtask, 2, 1, None, checkpointing,
        lambda collector, delivery, records: sent.append((delivery, pickle.loads(records))),
    )  # fmt: skip


def test_with_checkpointing_records_go_to_the_driver_only_when_their_checkpoint_completes():
    sent = []
    writer = CollectSink("c").create_writer(writer_context(sent))
    writer.write([1, 2])
    committables = writer.prepare_commit(7)
    writer.write([3])
    assert sent == []
    writer.commit(committables)
    assert sent == [("0/7/0", [1, 2])]
    writer.recover(committables, 3)  # a recovery sends them again, under the same id
    assert sent[-1] == ("0/7/0", [1, 2])


def test_big_batches_are_split_and_without_checkpointing_records_go_at_once():
    sent = []
    writer = CollectSink("c").create_writer(writer_context(sent))
    committables = (writer.write(list(range(BATCH + 5))), writer.prepare_commit(1))[1]
    assert [len(pickle.loads(c["records"])) for c in committables] == [BATCH, 5]
    immediate = []
    writer = CollectSink("c").create_writer(writer_context(immediate, checkpointing=False))
    writer.write(["a"])
    assert [records for _, records in immediate] == [["a"]]
