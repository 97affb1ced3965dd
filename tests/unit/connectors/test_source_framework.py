"""The source framework without Spark: enumerators assigning and discovering splits, their state
restored at another parallelism, the coordinator between readers and enumerator, and readers'
splits dealt out anew on a rescale."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from barrierflow.connectors.base.static_split_enumerator import (
    StaticSplitEnumerator,
    StaticSplitsState,
)
from barrierflow.connectors.builtin.range_reader import RangeSplit
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState, FileSplitEnumerator
from barrierflow.connectors.files.file_split import FileSplit
from barrierflow.datastream.connectors.base import (
    Source,
    SourceReader,
    SourceReaderContext,
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


class Context(SplitEnumeratorContext):
    """Records what an enumerator does; discoveries run when the test says."""

    def __init__(self, parallelism: int, readers: set[int]) -> None:
        self._parallelism = parallelism
        self.readers = readers
        self.assigned: dict[int, list[Split]] = {}
        self.ended: list[int] = []
        self.discoveries: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []

    @property
    def operator_uid(self) -> str:
        return "source"

    @property
    def parallelism(self) -> int:
        return self._parallelism

    def registered_readers(self) -> frozenset[int]:
        return frozenset(self.readers)

    def assign_splits(self, assignment: Mapping[int, list[Split]]) -> None:
        for subtask, splits in assignment.items():
            assert subtask in self.readers
            self.assigned.setdefault(subtask, []).extend(splits)

    def signal_no_more_splits(self, subtask: int) -> None:
        self.ended.append(subtask)

    def call_periodically(self, discover, handle, interval_s: float) -> None:
        self.discoveries.append((discover, handle))

    def discover(self) -> None:
        for discover, handle in self.discoveries:
            handle(discover())


def paths(splits: list[FileSplit]) -> list[str]:
    return [s.path for s in splits]


# --- enumerators ------------------------------------------------------------------------------


def test_a_static_enumerator_gives_each_reader_its_share_then_no_more():
    context = Context(2, {1})
    enumerator = StaticSplitEnumerator(context, NumberSequenceSource(1, 10).splits(2))
    enumerator.add_reader(1)
    assert context.assigned == {1: [RangeSplit(6, 10)]} and context.ended == [1]
    assert enumerator.snapshot_state(1) == StaticSplitsState([RangeSplit(1, 5)])


def test_a_static_enumerator_restored_at_another_parallelism_deals_out_what_no_reader_had():
    state = StaticSplitsState([RangeSplit(1, 2), RangeSplit(3, 4), RangeSplit(5, 6)])
    context = Context(2, {0, 1})
    enumerator = StaticSplitEnumerator.restore(context, state)
    enumerator.add_reader(0)
    enumerator.add_reader(1)
    assert context.assigned == {0: state.splits[0::2], 1: state.splits[1:2]}
    assert enumerator.snapshot_state(2) == StaticSplitsState([])


def test_a_file_enumerator_hands_out_one_file_per_request_then_ends_each_reader():
    context = Context(2, {0, 1})
    enumerator = FileSplitEnumerator(context, splits("abc"))
    enumerator.handle_split_request(1)
    enumerator.handle_split_request(0)
    enumerator.handle_split_request(1)
    assert {s: paths(splits) for s, splits in context.assigned.items()} == {1: ["a", "c"], 0: ["b"]}
    enumerator.handle_split_request(0)
    assert context.ended == [0]


def splits(names) -> list[FileSplit]:
    return [FileSplit(p) for p in names]


def test_a_monitoring_file_enumerator_hands_each_new_file_once_to_a_reader_that_waits():
    listing = ["a"]
    context = Context(1, {0})
    enumerator = FileSplitEnumerator(context, [], [], lambda: splits(listing), 1.0)
    enumerator.start()
    enumerator.handle_split_request(0)  # nothing yet: it waits
    context.discover()
    assert paths(context.assigned[0]) == ["a"]
    enumerator.handle_split_request(0)
    listing.append("b")
    context.discover()
    context.discover()  # found again: not handed out again
    assert paths(context.assigned[0]) == ["a", "b"] and context.ended == []
    assert enumerator.snapshot_state(3) == FileEnumeratorState([], ["a", "b"])


def test_a_restored_monitoring_file_enumerator_neither_forgets_nor_repeats_a_file():
    context = Context(3, {0, 1, 2})
    state = FileEnumeratorState([FileSplit("b")], ["a", "b"])
    enumerator = FileSplitEnumerator.restore(context, state, lambda: splits("abc"), 1.0)
    enumerator.start()
    context.discover()
    for subtask in (2, 0, 1):
        enumerator.handle_split_request(subtask)
    assert {s: paths(splits) for s, splits in context.assigned.items()} == {2: ["b"], 0: ["c"]}


def test_splits_given_back_are_handed_out_again():
    context = Context(1, {0})
    enumerator = FileSplitEnumerator(context, [FileSplit("b")])
    enumerator.add_splits_back([FileSplit("a", 7)], 0)
    enumerator.handle_split_request(0)
    assert context.assigned[0] == [FileSplit("a", 7)]


# --- the coordinator, through the harness ------------------------------------------------------


class OneSplitReader(SourceReader):
    """Reads the numbers of one split at a time, asking for the next when it has none."""

    def __init__(self, context: SourceReaderContext) -> None:
        self._context = context
        self._splits: list[Split] = []
        self._asked = False
        self._ended = False

    def start(self) -> None:
        self._ask()

    def _ask(self) -> None:
        if not self._asked:
            self._asked = True
            self._context.send_split_request()

    def add_splits(self, splits: list[Split]) -> None:
        self._splits += splits
        self._asked = False

    def notify_no_more_splits(self) -> None:
        self._ended = True

    def poll(self, max_records: int) -> list[Any] | None:
        if self._splits:
            return self._splits.pop(0)["numbers"]
        if self._ended:
            return None
        self._ask()
        return []

    def snapshot_state(self, checkpoint_id: int) -> list[Split]:
        return list(self._splits)


class DictEnumerator(SplitEnumerator):
    """An enumerator as connectors wrote them before codecs: dict splits, one to each reader
    that asks, and a dict as its state."""

    def __init__(self, context: SplitEnumeratorContext, pending: list[Split]) -> None:
        self._context = context
        self._pending = list(pending)

    def handle_split_request(self, subtask: int) -> None:
        if self._pending:
            self._context.assign_splits({subtask: [self._pending.pop(0)]})
        else:
            self._context.signal_no_more_splits(subtask)

    def add_splits_back(self, splits: list[Split], subtask: int) -> None:
        self._pending = splits + self._pending

    def add_reader(self, subtask: int) -> None:
        pass

    def snapshot_state(self, checkpoint_id: int) -> dict:
        return {"pending": self._pending}


class Requests(Source):
    """A source as connectors wrote them before codecs (dict splits, a dict as its enumerator's
    state: no codec of its own): hands a split to each reader that asks, from a list, or from
    what ``enumerator`` makes."""

    def __init__(self, splits: list[Split], enumerator: Any = None) -> None:
        self.splits = splits
        self.enumerator = enumerator

    def create_enumerator(self, context: SplitEnumeratorContext) -> SplitEnumerator:
        if self.enumerator is not None:
            return self.enumerator(context)
        return DictEnumerator(context, self.splits)

    def restore_enumerator(self, context: SplitEnumeratorContext, state: dict) -> SplitEnumerator:
        return DictEnumerator(context, state["pending"])

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        return OneSplitReader(context)


def numbered(*groups: list[int]) -> list[Split]:
    return [{"numbers": g} for g in groups]


def test_a_request_sent_while_the_reader_opens_is_answered_once_its_subtask_runs():
    (h,) = OperatorHarness.subtasks(operator(TransformationKind.SOURCE, Requests(numbered([1]))), 1)
    assert h.poll() == [1]  # its request, sent from open(), waited for the subtask to run
    assert h.poll() == []  # asks for the next
    assert h.poll() is None


def test_an_enumerator_that_assigns_to_a_reader_not_running_is_named():
    class Wrong(DictEnumerator):
        def add_reader(self, subtask: int) -> None:
            self._context.assign_splits({subtask + 1: [{"numbers": []}]})

    source = Requests([], lambda context: Wrong(context, []))
    with pytest.raises(ValueError, match=r"source 'source' .* subtask 1, whose reader is not"):
        OperatorHarness(operator(TransformationKind.SOURCE, source, uid="source"), parallelism=2)


def test_an_enumerator_state_that_is_not_plain_values_is_named():
    class Opaque(DictEnumerator):
        def snapshot_state(self, checkpoint_id: int) -> dict:
            return {"lock": object()}

    source = Requests([], lambda context: Opaque(context, []))
    h = OperatorHarness(operator(TransformationKind.SOURCE, source, uid="source"))
    with pytest.raises(TypeError, match=r"source 'source' .* enumerator's state: .*not plain"):
        h.snapshot(1)


def test_a_failing_discovery_is_logged_and_tried_again(caplog):
    attempts = []

    def discover() -> list[dict]:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("listing refused")
        return []

    source = Requests([], lambda context: FileSplitEnumerator(context, [], [], discover, 0.0))
    with caplog.at_level(logging.WARNING, logger="barrierflow.connectors"):
        h = OperatorHarness(operator(TransformationKind.SOURCE, source, uid="source"))
        h.coordinators.run_periodic_work()
    assert "discovery failed" in caplog.text and "listing refused" in caplog.text
    assert len(attempts) >= 2


@pytest.mark.parametrize("new_parallelism", [1, 3])
def test_readers_splits_are_dealt_out_anew_on_a_rescale_and_the_rest_stay_with_the_enumerator(
    new_parallelism,
):
    spec = operator(TransformationKind.SOURCE, Requests(numbered([1], [2], [3], [4], [5])))
    old = OperatorHarness.subtasks(spec, 2)
    # each reader got one split at start and reads nothing yet; three stay with the enumerator
    states = [h.snapshot(1) for h in old]
    read = [v for h in OperatorHarness.rescaled(spec, states, new_parallelism) for v in drain(h)]
    assert sorted(read) == [1, 2, 3, 4, 5]


def drain(h: OperatorHarness) -> list[int]:
    out: list[int] = []
    while (batch := h.poll()) is not None:
        out += batch
    return out


def test_a_typed_source_whose_splits_are_dicts_is_told_what_to_return():
    class DictSequence(NumberSequenceSource):
        def splits(self, parallelism: int) -> list[dict]:
            return [{"next": 1, "end": 3}]  # as splits were before codecs

    spec = operator(TransformationKind.SOURCE, DictSequence(1, 3), uid="source")
    with pytest.raises(TypeError, match=r"source 'source' .*expected a RangeSplit, got dict .*Ra"):
        OperatorHarness(spec)
