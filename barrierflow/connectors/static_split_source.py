"""A source whose splits are all known when the job starts (a range of numbers, the values of a
collection): its enumerator deals them out once (``StaticSplitEnumerator``); a subclass says
what the splits are and how a reader reads them."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from barrierflow.connectors.source import Source, Split
from barrierflow.connectors.split_enumerator import SplitEnumeratorContext
from barrierflow.connectors.static_split_enumerator import StaticSplitEnumerator


class StaticSplitSource(Source):
    @abstractmethod
    def splits(self, parallelism: int) -> list[Split]:
        """Every split of the input, for a job at ``parallelism``."""

    def create_enumerator(self, context: SplitEnumeratorContext) -> StaticSplitEnumerator:
        return StaticSplitEnumerator(context, self.splits(context.parallelism))

    def restore_enumerator(
        self, context: SplitEnumeratorContext, state: dict[str, Any]
    ) -> StaticSplitEnumerator:
        return StaticSplitEnumerator.restore(context, state)

    def enumerator_after_earlier_version(
        self, context: SplitEnumeratorContext
    ) -> StaticSplitEnumerator:
        """Earlier versions gave every split to a reader at the start, in the same format:
        the readers' restored splits are the whole input left, nothing is still to assign."""
        return StaticSplitEnumerator(context, [])
