"""The unit that runs through a task: a batch of values with optional columns.

A job without event time moves plain lists of values; a stream with event time adds one
column, the records' timestamps (epoch milliseconds, ``NO_TIMESTAMP`` where a record has none).
Both take the same path through operators, partitioners and buffers: an operator that keeps
one output per input passes the column on untouched (the same list), and one that drops or
multiplies records carries the column only when it is present, with C-level helpers
(``compress``, ``repeat_per_output``), so that a batch without it pays nothing for it.

A batch a source polled may also say where its records came from (``SourceSplits``: which
split each record was read from, and which splits the reader finished), for the timestamp
assigner right after the source, which keeps a watermark per split. It travels in the batch
rather than beside it, so that what a poll told arrives with the records it told it of, and
nothing else (no operator, input or chain) holds it in between; it lives only from the
source's input to that assigner: operators build their outputs as new batches without it, and
buffers never carry it (docs/adr/0025-split-provenance-in-the-batch.md).

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
class SourceSplits:
    """What a source's reader told of one poll's splits: ``runs``, which split each record came
    from, as runs of consecutive records (split id, count), in the records' order; ``ended``,
    the ids of the splits it read to their end since its last poll (they stop holding the
    watermark back)."""

    runs: list[tuple[str, int]]
    ended: list[str]


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """``values``: the records; ``timestamps``: their event timestamps, one per record, or
    None for a stream without event time; ``splits``: where a source's records came from, on
    the way from its input to the assigner after it only (None everywhere else)."""

    values: list[Any]
    timestamps: list[int] | None = None
    splits: SourceSplits | None = None

    def __len__(self) -> int:
        return len(self.values)

    # A batch these make of other records (a part of them, or more) has no ``splits``: its runs
    # count the records of the batch the source polled.

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
        mine, theirs = self.with_timestamps().timestamps, other.with_timestamps().timestamps
        assert mine is not None and theirs is not None
        return RecordBatch(self.values + other.values, mine + theirs)


EMPTY = RecordBatch([])


def repeat_per_output(timestamps: list[int], ends: list[int]) -> list[int]:
    """The timestamp column of the outputs of an operator that emitted, for input *i*, the
    outputs up to ``ends[i]`` (exclusive): each output gets its input's timestamp."""
    n = len(timestamps)
    if ends and ends[-1] == n and ends == list(range(1, n + 1)):
        return timestamps  # one output per input: the column as it was
    counts = map(sub, ends, chain((0,), ends))
    return list(chain.from_iterable(map(repeat, timestamps, counts)))
