"""The sink behind ``print()`` and ``execute_and_collect``: batches go to the driver when their
checkpoint completes, again (under the same delivery id) after a recovery, and at once without
checkpointing."""

from __future__ import annotations

import pickle

from barrierflow.connectors.builtin.collect_sink import BATCH, CollectSink
from barrierflow.connectors.interfaces.committables import Committable
from barrierflow.datastream.connectors.base import CommitterContext, SinkWriterContext


def send_to(sent: list):
    return lambda collector, delivery, records: sent.append((delivery, pickle.loads(records)))


def writer_context(sent, checkpointing=True, subtask=0):
    return SinkWriterContext(
        "job", "job", "sink", subtask, 2, 1, None, checkpointing, send_to(sent)
    )  # fmt: skip


def test_with_checkpointing_records_go_to_the_driver_only_when_their_checkpoint_completes():
    sent = []
    sink = CollectSink("c")
    writer = sink.create_writer(writer_context(sent))
    committer = sink.create_committer(
        CommitterContext("job", "job", "sink", 0, 2, 1, writer, send_to(sent))
    )
    writer.write([1, 2])
    committables = [Committable(7, 0, c) for c in writer.prepare_commit(7)]
    writer.write([3])
    assert sent == []
    committer.commit(committables)
    assert sent == [("0/7/0", [1, 2])]
    committer.commit(committables)  # a recovery sends them again, under the same id
    assert sent[-1] == ("0/7/0", [1, 2])


def test_big_batches_are_split_and_without_checkpointing_records_go_at_once():
    sent = []
    writer = CollectSink("c").create_writer(writer_context(sent))
    committables = (writer.write(list(range(BATCH + 5))), writer.prepare_commit(1))[1]
    assert [len(pickle.loads(c.records)) for c in committables] == [BATCH, 5]
    immediate = []
    writer = CollectSink("c").create_writer(writer_context(immediate, checkpointing=False))
    writer.write(["a"])
    assert [records for _, records in immediate] == [["a"]]
