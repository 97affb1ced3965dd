"""The split reader every reader of typed splits is built on, in both shapes: many splits at
once (as Kafka's partitions) and one at a time (files, table data files, ranges). It keeps the
splits at their positions, says which split each record came from and which ended, what a
checkpoint keeps, and when the input ends; the readers say only how to read."""

from __future__ import annotations

from typing import Any

import msgspec

from barrierflow.connectors.base.sequential_split_reader import SequentialSplitReader
from barrierflow.connectors.base.split_reader import Fetched, SplitReader


class Letters(msgspec.Struct, frozen=True):
    """The letters of ``word`` from position ``at`` on."""

    word: str
    at: int = 0

    @property
    def split_id(self) -> str:
        return self.word


class Interleaved(SplitReader[Letters]):
    """Reads a letter of every split in turn, twice over, per fetch (as a consumer's batch
    interleaves partitions)."""

    def __init__(self) -> None:
        super().__init__()
        self.finished_hook: list[Letters] = []

    def _fetch(self, max_records: int) -> Fetched[Letters]:
        fetched: Fetched[Letters] = Fetched()
        at = {s.word: s.at for s in self._unfinished().values()}
        for word in [*at, *at][:max_records]:
            if at[word] < len(word):
                fetched.runs.append((Letters(word, at[word] + 1), [word[at[word]]]))
                at[word] += 1
                if at[word] == len(word):
                    fetched.finished.append(word)
        return fetched

    def _splits_finished(self, splits: list[Letters]) -> None:
        self.finished_hook += splits


class OneAtATime(SequentialSplitReader[Letters]):
    def __init__(self, request_split=None) -> None:
        super().__init__(request_split)
        self.calls: list[str] = []

    def _open_split(self, split: Letters) -> None:
        self.calls.append(f"open {split.word}@{split.at}")

    def _read_split(self, split: Letters, max_records: int) -> tuple[list[Any], Letters, bool]:
        end = min(len(split.word), split.at + max_records)
        return list(split.word[split.at : end]), Letters(split.word, end), end == len(split.word)

    def _close_split(self) -> None:
        self.calls.append("close")


def test_a_batch_of_many_splits_becomes_runs_positions_and_finished_splits():
    r = Interleaved()
    r.add_splits([Letters("ab"), Letters("xyz")])
    r.notify_no_more_splits()
    assert r.poll(10) == ["a", "x", "b", "y"]
    assert r.split_runs() == [("ab", 1), ("xyz", 1), ("ab", 1), ("xyz", 1)]
    assert r.finished_splits() == ["ab"] and r.finished_splits() == []
    assert r.finished_hook == [Letters("ab", 2)]
    assert r.snapshot_state(1) == [Letters("xyz", 2)]
    assert r.poll(10) == ["z"] and r.finished_splits() == ["xyz"]
    assert r.poll(10) is None and r.split_runs() == []


def test_without_word_of_no_more_splits_a_reader_with_none_left_waits():
    r = Interleaved()
    r.add_splits([Letters("a")])
    assert r.poll(10) == ["a"]
    assert r.poll(10) == []  # more may come
    r.add_splits([Letters("b")])
    assert r.poll(10) == ["b"]
    r.notify_no_more_splits()
    assert r.poll(10) is None


def test_a_split_restored_mid_way_is_read_from_its_position():
    r = Interleaved()
    r.add_splits([Letters("abc", 2)])
    r.notify_no_more_splits()
    assert r.poll(10) == ["c"]


def test_one_at_a_time_opens_each_split_at_its_position_and_closes_it_at_its_end():
    requests: list[int] = []
    r = OneAtATime(lambda: requests.append(1))
    r.add_splits([Letters("abc", 1), Letters("de")])
    r.start()
    assert requests == []  # it has splits: it asks for none
    assert r.poll(1) == ["b"] and r.split_runs() == [("abc", 1)]
    assert r.snapshot_state(1) == [Letters("abc", 2), Letters("de")]
    assert r.poll(5) == ["c"] and r.finished_splits() == ["abc"]
    assert r.poll(5) == ["d", "e"]
    assert r.calls == ["open abc@1", "close", "open de@0", "close"]
    assert requests == [1]  # the next one, asked for as the last ended
    assert r.poll(5) == [] and requests == [1]  # asked once until an answer
    r.notify_no_more_splits()
    assert r.poll(5) is None


def test_one_at_a_time_asks_at_its_start_when_it_has_nothing_and_never_when_splits_are_pushed():
    requests: list[int] = []
    pulling = OneAtATime(lambda: requests.append(1))
    pulling.start()
    assert requests == [1]
    pushed = OneAtATime()
    pushed.start()
    assert pushed.poll(5) == []


def test_closing_mid_split_closes_the_open_split():
    r = OneAtATime()
    r.add_splits([Letters("abc")])
    r.poll(1)
    r.close()
    assert r.calls == ["open abc@0", "close"]
    assert r.snapshot_state(1) == [Letters("abc", 1)]
