"""A connector's function mapped over a whole batch at C speed (a Python loop of ours per
record cost as much as the work itself: docs/benchmarks.md, Kafka to Kafka), and, when it
fails, the record it fails on, so that the error can name it. Performs no I/O."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class BatchItemError(Exception):
    """``function`` failed on ``items[index]``; ``index`` None when no item fails on its own
    (a function that keeps state failed only in the batch)."""

    def __init__(self, index: int | None, error: Exception) -> None:
        super().__init__(str(error))
        self.index, self.error = index, error


def map_batch(function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``list(map(function, items))``; when that raises, the items again one at a time, to
    raise ``BatchItemError`` with the first that fails."""
    try:
        return list(map(function, items))
    except Exception as e:  # noqa: BLE001 - raised below, with the item that fails
        failed = e
    for index, item in enumerate(items):
        try:
            function(item)
        except Exception as e:
            raise BatchItemError(index, e) from e
    raise BatchItemError(None, failed) from failed
