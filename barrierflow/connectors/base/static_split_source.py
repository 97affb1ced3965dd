"""A source whose splits are all known when the job starts (a range of numbers, the values of a
collection): its enumerator deals them out once (``StaticSplitEnumerator``); a subclass says
what the splits are (a msgspec struct: ``split_type``) and how a reader reads them. Performs no
I/O."""

from __future__ import annotations

import functools
from abc import abstractmethod
from typing import Any

from barrierflow.connectors.base.static_split_enumerator import (
    StaticSplitEnumerator,
    StaticSplitsState,
    StaticSplitsStateCodec,
)
from barrierflow.connectors.base.struct_codec import StructCodec
from barrierflow.connectors.interfaces.source import Source, Split
from barrierflow.connectors.interfaces.split_enumerator import SplitEnumeratorContext


class StaticSplitSource(Source):
    @property
    @abstractmethod
    def split_type(self) -> type:
        """The msgspec struct of its splits."""

    @abstractmethod
    def splits(self, parallelism: int) -> list[Split]:
        """Every split of the input, for a job at ``parallelism``."""

    def create_enumerator(self, context: SplitEnumeratorContext) -> StaticSplitEnumerator:
        return StaticSplitEnumerator(context, self.splits(context.parallelism))

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: StaticSplitsState[Any]
    ) -> StaticSplitEnumerator:
        return StaticSplitEnumerator.restore(context, state)

    def split_codec(self) -> StructCodec[Any]:
        return _codecs(self.split_type)[0]

    def enumerator_state_codec(self) -> StaticSplitsStateCodec:
        return _codecs(self.split_type)[1]


@functools.cache
def _codecs(split_type: type) -> tuple[StructCodec[Any], StaticSplitsStateCodec]:
    # the state's type is made at run time, for msgspec to decode the splits by: no static type
    state_type = StaticSplitsState[split_type]  # type: ignore[valid-type]
    return StructCodec(split_type), StaticSplitsStateCodec(state_type)
