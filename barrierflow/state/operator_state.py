"""Operator (non-keyed) list state: source positions, sink transactions.

Three redistribution modes on restore, as Flink's: *split* (each subtask gets a share of all
entries; with unchanged parallelism, exactly its own), *union* (every subtask gets all) and
*broadcast* (every subtask held the same entries: each gets one old subtask's copy).
Entries must be MessagePack-encodable (None, bool, int, float, str, bytes, lists, dicts): this
state is read by the runtime before any user code runs, so it is never pickled.

**Threading:** task thread only. Performs no I/O: it encodes to and decodes from bytes.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec


class DistributionMode(enum.Enum):
    SPLIT = "split"
    UNION = "union"
    BROADCAST = "broadcast"


class _NamedState(msgspec.Struct, frozen=True):
    mode: str
    entries: list[Any]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(dict[str, _NamedState])


def read_snapshot(data: bytes) -> dict[str, tuple[DistributionMode, list[Any]]]:
    """The states of one subtask's snapshot: name -> (distribution mode, entries)."""
    return {
        name: (DistributionMode(named.mode), named.entries)
        for name, named in _decoder.decode(data).items()
    }


class OperatorListState:
    __slots__ = ("entries", "mode")

    def __init__(self, mode: DistributionMode) -> None:
        self.mode = mode
        self.entries: list[Any] = []

    def get(self) -> list[Any]:
        return list(self.entries)

    def add(self, value: Any) -> None:
        self.entries.append(value)

    def update(self, values: list[Any]) -> None:
        self.entries = list(values)

    def clear(self) -> None:
        self.entries = []


class OperatorStateStore:
    def __init__(self) -> None:
        self._states: dict[str, OperatorListState] = {}
        self._restored: dict[str, list[Any]] = {}

    def get_list_state(self, name: str) -> OperatorListState:
        return self._get(name, DistributionMode.SPLIT)

    def get_union_list_state(self, name: str) -> OperatorListState:
        return self._get(name, DistributionMode.UNION)

    def get_broadcast_list_state(self, name: str) -> OperatorListState:
        return self._get(name, DistributionMode.BROADCAST)

    def _get(self, name: str, mode: DistributionMode) -> OperatorListState:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = OperatorListState(mode)
            state.entries = self._restored.pop(name, [])
        elif state.mode is not mode:
            raise ValueError(f"operator state {name!r} is {state.mode.value} list state")
        return state

    def is_empty(self) -> bool:
        return not any(s.entries for s in self._states.values())

    def snapshot(self) -> bytes:
        return _encoder.encode(
            {n: _NamedState(s.mode.value, list(s.entries)) for n, s in self._states.items()}
        )

    def restore(self, snapshots: list[bytes | None], subtask: int, parallelism: int) -> None:
        """``snapshots``: every old subtask's bytes (None where it had none), in subtask order."""
        same_parallelism = len(snapshots) == parallelism
        split: dict[str, list[Any]] = {}
        copies: dict[str, dict[int, list[Any]]] = {}  # broadcast: name -> old subtask -> copy
        for old_subtask, data in enumerate(snapshots):
            if data is None:
                continue
            for name, named in _decoder.decode(data).items():
                if named.mode == DistributionMode.BROADCAST.value:
                    copies.setdefault(name, {})[old_subtask] = named.entries
                elif named.mode == DistributionMode.UNION.value:
                    self._restored.setdefault(name, []).extend(named.entries)
                elif same_parallelism:
                    if old_subtask == subtask:
                        self._restored.setdefault(name, []).extend(named.entries)
                else:
                    split.setdefault(name, []).extend(named.entries)
        for name, entries in split.items():
            self._restored.setdefault(name, []).extend(entries[subtask::parallelism])
        for name, by_subtask in copies.items():  # the same subtask's copy where it existed
            old = sorted(by_subtask)
            self._restored[name] = list(by_subtask[old[subtask % len(old)]])
