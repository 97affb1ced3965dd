"""The enumerator of a source whose splits are all known when the job starts (a range of
numbers, the values of a collection): each goes to the subtask its place in the list names
(round robin), when that subtask's reader registers, which is then told there are no more.
Performs no I/O."""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.split_enumerator import Split, SplitEnumerator, SplitEnumeratorContext


class StaticSplitEnumerator(SplitEnumerator):
    """Its state is the splits not assigned yet (after the readers registered: none), so that
    a restore, at any parallelism, deals out only what no reader had."""

    def __init__(self, context: SplitEnumeratorContext, splits: list[Split]) -> None:
        self._context = context
        p = context.parallelism
        self._pending: list[tuple[int, Split]] = [(i % p, s) for i, s in enumerate(splits)]

    @classmethod
    def restore(
        cls, context: SplitEnumeratorContext, state: dict[str, Any]
    ) -> StaticSplitEnumerator:
        return cls(context, list(state["splits"]))

    def add_reader(self, subtask: int) -> None:
        mine = [split for owner, split in self._pending if owner == subtask]
        self._pending = [(owner, split) for owner, split in self._pending if owner != subtask]
        self._context.assign_splits({subtask: mine})
        self._context.signal_no_more_splits(subtask)

    def handle_split_request(self, subtask: int) -> None:
        pass  # its readers are given their splits when they register

    def add_splits_back(self, splits: list[Split], subtask: int) -> None:
        self._pending += [(subtask, split) for split in splits]

    def snapshot_state(self, checkpoint_id: int) -> dict[str, Any]:
        return {"splits": [split for _, split in self._pending]}
