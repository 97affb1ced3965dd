"""Key-group ranges: which key groups a subtask owns, as in Flink's ``KeyGroupRange`` and
``KeyGroupRangeAssignment``.

Keyed state is split into ``max_parallelism`` key groups, and a subtask owns a contiguous range
of them. The arithmetic lives here, below every layer, because every side of the protocol
agrees on it: the partitioner that routes a key group to its subtask, the backends that keep a
range, the key-group format that writes and reads one, and the coordinator that assigns ranges
on restore. How a key hashes to its key group is the state's (``state/key_groups.py``).

Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

DEFAULT_MAX_PARALLELISM = 128
UPPER_BOUND_MAX_PARALLELISM = 1 << 15


@dataclass(frozen=True, slots=True)
class KeyGroupRange:
    """An inclusive range of key groups ``[start, end]``; empty when ``end < start``."""

    start: int
    end: int

    def __contains__(self, key_group: object) -> bool:
        return isinstance(key_group, int) and self.start <= key_group <= self.end

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end + 1))

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def intersection(self, other: KeyGroupRange) -> KeyGroupRange:
        return KeyGroupRange(max(self.start, other.start), min(self.end, other.end))


def key_group_range_for_subtask(
    max_parallelism: int, parallelism: int, subtask_index: int
) -> KeyGroupRange:
    """The contiguous key groups owned by one subtask (Flink's computation)."""
    start = (subtask_index * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask_index + 1) * max_parallelism - 1) // parallelism
    return KeyGroupRange(start, end)


def subtask_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The subtask whose range holds ``key_group``: the inverse of
    ``key_group_range_for_subtask``."""
    return key_group * parallelism // max_parallelism
