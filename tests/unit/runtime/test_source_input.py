"""A source's input hands the chain each poll's records; where the source tells splits and the
operator after it keeps a watermark per split, each batch carries what the reader told of the
poll (``RecordBatch.splits``), and a poll without records that ended splits says so in an
empty batch."""

from __future__ import annotations

from barrierflow.common import Duration, WatermarkStrategy
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.record_batch import RecordBatch, SourceSplits
from barrierflow.protocol.source_backlog import SourceBacklog
from barrierflow.runtime.input_processor import DataInputStatus
from barrierflow.runtime.source_input import SourceInput
from barrierflow.runtime.task_metrics import TaskIOMetrics
from barrierflow.testing.harness import OperatorHarness, operator

MORE, NOTHING = DataInputStatus.MORE_AVAILABLE, DataInputStatus.NOTHING_AVAILABLE


class ScriptedSource:
    """A source operator's reading side, by script: each poll's (records, runs, ended)."""

    def __init__(self, polls, tells_splits: bool = True) -> None:
        self._polls = list(polls)
        self.tells_splits = tells_splits
        self._last = ([], [], [])
        self.asked: list[str] = []

    def poll(self, max_records: int):
        self._last = self._polls.pop(0) if self._polls else ([], [], [])
        return self._last[0]

    def last_poll_splits(self):
        self.asked.append("runs")
        return self._last[1]

    def finished_splits(self):
        self.asked.append("ended")
        return self._last[2]

    def backlog(self):
        self.asked.append("backlog")
        return SourceBacklog("unread records", len(self._polls), 0)


class RecordingChain:
    def __init__(self, watermarks_per_split: bool, head: OperatorHarness | None = None) -> None:
        self.watermarks_per_split = watermarks_per_split
        self.batches: list[RecordBatch] = []
        self._head = head

    def process(self, batch: RecordBatch) -> None:
        self.batches.append(batch)
        if self._head is not None:
            self._head.process_batch(batch)


def source_input(source: ScriptedSource, chain: RecordingChain) -> SourceInput:
    return SourceInput(source, chain, TaskIOMetrics("source", 0), 10, lambda: False)


def test_batches_carry_their_splits_to_an_assigner_that_keeps_a_watermark_per_split():
    polls = [
        (["a", "b"], [("s1", 2)], []),
        ([], [], []),
        ([], [], ["s1"]),
        (["c"], [("s2", 1)], []),
    ]
    chain = RecordingChain(watermarks_per_split=True)
    task_input = source_input(ScriptedSource(polls), chain)
    assert [task_input.process_input() for _ in range(4)] == [MORE, NOTHING, NOTHING, MORE]
    assert chain.batches == [
        RecordBatch(["a", "b"], None, SourceSplits([("s1", 2)], [])),
        RecordBatch([], None, SourceSplits([], ["s1"])),  # the empty poll that ended a split
        RecordBatch(["c"], None, SourceSplits([("s2", 1)], [])),
    ]


def test_without_an_assigner_per_split_after_it_the_source_is_not_asked_for_its_splits():
    for source, chain in (
        (ScriptedSource([(["a"], [("s1", 1)], ["s0"])]), RecordingChain(False)),
        (ScriptedSource([(["a"], [], [])], tells_splits=False), RecordingChain(True)),
    ):
        assert source_input(source, chain).process_input() is MORE
        assert chain.batches == [RecordBatch(["a"])]
        assert "runs" not in source.asked and "ended" not in source.asked


def test_with_every_split_ended_polls_that_find_nothing_do_not_hold_idleness_off():
    # An unbounded source whose splits all ended keeps polling, finding nothing: the subtask
    # goes idle once the idle timeout passed since the last split ended.
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps()
        .with_timestamp_assigner(lambda value, _: value)
        .with_idleness(Duration.of_seconds(1))
    )
    assigner = OperatorHarness(operator(TransformationKind.TIMESTAMPS, strategy))
    polls = [([500], [("file", 1)], []), ([], [], ["file"])]
    task_input = source_input(ScriptedSource(polls), RecordingChain(True, assigner))
    op = assigner.operator
    assert op.periodic_watermark(0) == (None, None)
    task_input.process_input()
    assert op.periodic_watermark(100) == (499, None)
    task_input.process_input()  # the file ended, at 100 as far as the assigner knows
    statuses = []
    for now_ms in range(300, 1_300, 200):
        task_input.process_input()  # nothing
        statuses.append(op.periodic_watermark(now_ms))
    assert statuses == [(None, None)] * 4 + [(None, True)]  # idle at 1,100
    assigner.close()


def test_the_sources_backlog_reaches_the_metrics_once_a_second_from_the_task_thread():
    source = ScriptedSource([([1], [], []), ([2], [], []), ([3], [], [])], tells_splits=False)
    task_input = source_input(source, RecordingChain(watermarks_per_split=False))
    task_input.process_input()
    task_input._metrics.start()
    assert task_input._metrics.sample().backlog == SourceBacklog("unread records", 3, 0)
    task_input.process_input()
    task_input.process_input()
    assert source.asked.count("backlog") == 1  # not again within the second
