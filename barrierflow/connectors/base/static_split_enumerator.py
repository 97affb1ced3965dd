"""The enumerator of a source whose splits are all known when the job starts (a range of
numbers, the values of a collection): each goes to the subtask its place in the list names
(round robin), when that subtask's reader registers, which is then told there are no more.
Performs no I/O."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.split_enumerator import (
    Split,
    SplitEnumerator,
    SplitEnumeratorContext,
)
from barrierflow.connectors.interfaces.versioned_codec import BEFORE_ENUMERATORS

S = TypeVar("S")


class StaticSplitsState(msgspec.Struct, Generic[S], frozen=True):
    """The splits no reader was given yet."""

    splits: list[S]


class StaticSplitsStateCodec(StructCodec[StaticSplitsState[Any]]):
    """``StaticSplitsState[split type]``, and what a checkpoint taken before sources had
    enumerators leaves to assign (``BEFORE_ENUMERATORS``): nothing, for such a source gave
    every split to a reader at the start, in the same format, so the readers' restored splits
    are the whole input left."""

    def deserialize(self, version: int, data: bytes) -> StaticSplitsState[Any]:
        if version == BEFORE_ENUMERATORS:
            return StaticSplitsState([])
        return super().deserialize(version, data)


class StaticSplitEnumerator(SplitEnumerator):
    """Its state is the splits not assigned yet (after the readers registered: none), so that
    a restore, at any parallelism, deals out only what no reader had."""

    def __init__(self, context: SplitEnumeratorContext, splits: list[Split]) -> None:
        self._context = context
        p = context.parallelism
        self._pending: list[tuple[int, Split]] = [(i % p, s) for i, s in enumerate(splits)]

    @classmethod
    def restore(
        cls, context: SplitEnumeratorContext, state: StaticSplitsState[Any]
    ) -> StaticSplitEnumerator:
        return cls(context, list(state.splits))

    def add_reader(self, subtask: int) -> None:
        mine = [split for owner, split in self._pending if owner == subtask]
        self._pending = [(owner, split) for owner, split in self._pending if owner != subtask]
        self._context.assign_splits({subtask: mine})
        self._context.signal_no_more_splits(subtask)

    def handle_split_request(self, subtask: int) -> None:
        pass  # its readers are given their splits when they register

    def add_splits_back(self, splits: list[Split], subtask: int) -> None:
        self._pending += [(subtask, split) for split in splits]

    def snapshot_state(self, checkpoint_id: int) -> StaticSplitsState[Any]:
        return StaticSplitsState([split for _, split in self._pending])
