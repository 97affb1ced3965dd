"""The unit that runs through a task: a batch of values with optional columns.

A job without event time moves plain lists of values; a stream with event time adds one
column, the records' timestamps (epoch milliseconds, ``NO_TIMESTAMP`` where a record has none).
Both take the same path through operators, partitioners and buffers: an operator that keeps
one output per input passes the column on untouched (the same list), and one that drops or
multiplies records carries the column only when it is present, with C-level helpers
(``compress``, ``repeat_per_output``), so that a batch without it pays nothing for it.

A batch's lists are not changed after the batch is made: operators build new ones, so a list
may be shared by the input and the output of an operator.

Performs no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import sub
from typing import Any

from barrierflow.eventtime.timestamps import NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """``values``: the records; ``timestamps``: their event timestamps, one per record, or
    None for a stream without event time."""

    values: list[Any]
    timestamps: list[int] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def compress(self, flags: list[Any]) -> RecordBatch:
        """The records whose flag is true, with their timestamps."""
        ts = self.timestamps
        return RecordBatch(
            list(compress(self.values, flags)), None if ts is None else list(compress(ts, flags))
        )

    def slice(self, start: int, stop: int | None = None) -> RecordBatch:
        ts = self.timestamps
        return RecordBatch(self.values[start:stop], None if ts is None else ts[start:stop])

    def with_timestamps(self) -> RecordBatch:
        """This batch with a timestamp column (``NO_TIMESTAMP`` where it had none)."""
        if self.timestamps is not None:
            return self
        return RecordBatch(self.values, [NO_TIMESTAMP] * len(self.values))

    def concat(self, other: RecordBatch) -> RecordBatch:
        """Both batches, this one first; a column either has is kept for all records."""
        if not other.values:
            return self
        if not self.values:
            return other
        if self.timestamps is None and other.timestamps is None:
            return RecordBatch(self.values + other.values)
        return RecordBatch(
            self.values + other.values,
            self.with_timestamps().timestamps + other.with_timestamps().timestamps,
        )


EMPTY = RecordBatch([])


def repeat_per_output(timestamps: list[int], ends: list[int]) -> list[int]:
    """The timestamp column of the outputs of an operator that emitted, for input *i*, the
    outputs up to ``ends[i]`` (exclusive): each output gets its input's timestamp."""
    n = len(timestamps)
    if ends and ends[-1] == n and ends == list(range(1, n + 1)):
        return timestamps  # one output per input: the column as it was
    counts = map(sub, ends, chain((0,), ends))
    return list(chain.from_iterable(map(repeat, timestamps, counts)))
