"""The run-time check of a stream reinterpreted as keyed (``reinterpret_as_keyed_stream``):
each record that reaches the keyed operator must be of a key whose key group the subtask owns.

Nothing else would notice a record of another subtask's key group: its key's state would be
made here as well as in its owner, results split between them, and the checkpoint would fail
later on a key group outside the range, or a restore would hand its state to the wrong
subtask. Every keyed operator (process, reductions, windows) runs it where it selects the
key anyway. It runs per record, on the hot path: a key seen once is remembered, and later
records of it cost one set lookup (a key's group is hashed once, not per record); the keyed
process operator's loop makes the lookup itself, since a Python call per record (a wrapped key
selector, as the window operator takes) costs several times more. Performs no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from barrierflow.protocol.key_group_range import KeyGroupRange, subtask_for_key_group
from barrierflow.runtime.operators.stream_operator import NotADeadLetter
from barrierflow.state.key_groups import assign_to_key_group

# Keys remembered as owned before the memory is cleared (and refilled, each key checked again)
OWNED_KEYS_CAPACITY = 1 << 18


class KeyGroupMismatchError(NotADeadLetter, ValueError):
    """A record reached a subtask that does not own its key's key group: the stream given to
    ``reinterpret_as_keyed_stream`` was not partitioned as ``key_by`` would partition it."""


def mismatch(
    key: Any, key_group: int, subtask: int, key_groups: KeyGroupRange, parallelism: int,
    max_parallelism: int,
) -> KeyGroupMismatchError:  # fmt: skip
    """What is wrong, and what it means; the operator's failure adds the record."""
    owner = subtask_for_key_group(max_parallelism, parallelism, key_group)
    return KeyGroupMismatchError(
        f"key {key!r:.100} is in key group {key_group}, which is subtask {owner}'s, not subtask "
        f"{subtask}'s (key groups {key_groups.start} to {key_groups.end} of {max_parallelism}, "
        f"at parallelism {parallelism}): the stream given to reinterpret_as_keyed_stream is "
        "not partitioned as key_by would partition it. Partition it by key group for this "
        "parallelism (a Kafka topic written with KeyGroupPartitioner, after a rescale too), "
        "or use key_by",
        key,
    )


class KeyGroupCheck:
    """Subtask ``subtask``'s check: ``admit`` a key not in ``owned`` yet, which raises
    ``KeyGroupMismatchError`` unless its key group is in ``key_groups``, and remembers it.
    The hot loop of the keyed process operator tests ``key in check.owned`` itself, and calls
    ``admit`` only for a new key; other operators take the key selector ``checked`` wraps."""

    __slots__ = (
        "_capacity",
        "_key_groups",
        "_max_parallelism",
        "_parallelism",
        "_subtask",
        "owned",
    )

    def __init__(
        self,
        subtask: int,
        parallelism: int,
        max_parallelism: int,
        key_groups: KeyGroupRange,
        capacity: int = OWNED_KEYS_CAPACITY,
    ) -> None:
        self.owned: set[Any] = set()
        self._subtask, self._parallelism = subtask, parallelism
        self._max_parallelism, self._key_groups = max_parallelism, key_groups
        self._capacity = capacity

    def admit(self, key: Any) -> None:
        key_group = assign_to_key_group(key, self._max_parallelism)
        key_groups = self._key_groups
        if not key_groups.start <= key_group <= key_groups.end:
            raise mismatch(
                key, key_group, self._subtask, key_groups, self._parallelism,
                self._max_parallelism,
            )  # fmt: skip
        owned = self.owned
        if len(owned) >= self._capacity:
            owned.clear()
        owned.add(key)

    def checked(self, select: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``select``, checking each key it returns."""
        owned, admit = self.owned, self.admit

        def checked_select(record: Any) -> Any:
            key = select(record)
            if key not in owned:
                admit(key)
            return key

        return checked_select
