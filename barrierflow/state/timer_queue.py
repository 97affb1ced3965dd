"""The timers of one time domain (event or processing time) of a keyed operator: a priority
queue by time, one timer per (time, key, namespace), kept by key group so that a checkpoint
writes each key group's timers and a restore at another parallelism takes the key groups it now
owns (Flink's ``InternalTimerServiceImpl`` heap queues).

A namespace tells timers of the same key and time apart where an operator needs it (a window's
timers carry their window); a ``KeyedProcessFunction``'s timers have none (None).

Deleting is lazy: a deleted timer stays in the heap, unknown to the index, and is skipped when
it comes up, so deleting costs O(1) and firing stays O(log n). Performs no I/O.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterable, Iterator
from typing import Any, NamedTuple


class Timer(NamedTuple):
    """A tuple: made, hashed and compared in C, on the path of every record that sets one."""

    timestamp: int
    key: Any
    namespace: Hashable | None = None


class TimerQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Timer]] = []  # (timestamp, insertion order, timer)
        self._key_group_of: dict[Timer, int] = {}  # the live timers and their key groups
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._key_group_of)

    def add(self, timer: Timer, key_group: int) -> bool:
        """Registers ``timer``; False if the same timer was registered already."""
        if timer in self._key_group_of:
            return False
        self._key_group_of[timer] = key_group
        heapq.heappush(self._heap, (timer.timestamp, next(self._order), timer))
        return True

    def delete(self, timer: Timer) -> bool:
        """Deletes ``timer``; False if it was not registered (or fired already)."""
        return self._key_group_of.pop(timer, None) is not None

    def next_timestamp(self) -> int | None:
        """The time of the earliest live timer, None if none."""
        self._skip_deleted()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, time: int) -> Iterator[Timer]:
        """Takes out, earliest first, each live timer at or before ``time``. A timer registered
        while this runs, at or before ``time``, is taken too (as Flink fires it)."""
        while True:
            self._skip_deleted()
            if not self._heap or self._heap[0][0] > time:
                return
            _, _, timer = heapq.heappop(self._heap)
            del self._key_group_of[timer]
            yield timer

    def _skip_deleted(self) -> None:
        heap = self._heap
        while heap and heap[0][2] not in self._key_group_of:
            heapq.heappop(heap)

    # --- checkpoints ----------------------------------------------------------------------

    def by_key_group(self) -> dict[int, list[Timer]]:
        """The live timers of each key group, earliest first, for a snapshot."""
        groups: dict[int, list[Timer]] = {}
        seen: set[Timer] = set()  # a timer deleted and added again is in the heap twice
        for _, _, timer in sorted(self._heap, key=lambda e: (e[0], e[1])):
            key_group = self._key_group_of.get(timer)
            if key_group is not None and timer not in seen:
                seen.add(timer)
                groups.setdefault(key_group, []).append(timer)
        return groups

    def restore(self, key_group: int, timers: Iterable[Timer]) -> None:
        """Adds the timers of ``key_group`` from a snapshot (deduplicated like any add)."""
        for timer in timers:
            self.add(timer, key_group)
