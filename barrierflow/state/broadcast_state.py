"""Broadcast state: maps every subtask of an operator holds alike, changed only by the records
of a broadcast stream (``stream.broadcast(MapStateDescriptor(...))``).

Because every subtask holds the same maps, a snapshot stores each subtask's copy and a restore,
at any parallelism, gives each new subtask one old copy (``operator_state.py``'s broadcast
mode), as Flink does. Keys and values are the program's objects (checked against the
descriptor's declared types) and are pickled, as heap keyed state values are; the runtime reads
no metadata from them.

**Threading:** task thread only. Performs no I/O: it encodes to and decodes from bytes.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import Any

from barrierflow.state.descriptors import StateDescriptor
from barrierflow.state.operator_state import OperatorStateStore
from barrierflow.state.typed_state import typed


class ReadOnlyBroadcastState:
    """What ``process_element`` sees: reads only, since a change made by one subtask on one
    of its records would make the subtasks' copies differ."""

    def __init__(self, entries: dict[Any, Any], name: str) -> None:
        self._entries = entries
        self._name = name

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def contains(self, key: Any) -> bool:
        return key in self._entries

    def items(self) -> Iterable[tuple[Any, Any]]:
        return list(self._entries.items())

    def keys(self) -> Iterable[Any]:
        return list(self._entries)

    def values(self) -> Iterable[Any]:
        return list(self._entries.values())

    def is_empty(self) -> bool:
        return not self._entries

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._entries))

    def __getitem__(self, key: Any) -> Any:
        return self.get(key)

    def __contains__(self, key: Any) -> bool:
        return self.contains(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.remove(key)

    def _read_only(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"broadcast state {self._name!r} is read-only in process_element(); change it in "
            f"process_broadcast_element() (tried {what})"
        )

    def put(self, key: Any, value: Any) -> None:
        raise self._read_only("put")

    def put_all(self, entries: dict[Any, Any]) -> None:
        raise self._read_only("put_all")

    def remove(self, key: Any) -> None:
        raise self._read_only("remove")

    def clear(self) -> None:
        raise self._read_only("clear")


class BroadcastState(ReadOnlyBroadcastState):
    def put(self, key: Any, value: Any) -> None:
        self._entries[key] = value

    def put_all(self, entries: dict[Any, Any]) -> None:
        self._entries.update(entries)

    def remove(self, key: Any) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


class BroadcastStateStore:
    """The broadcast maps of one operator subtask, by descriptor name; only the names the
    program declared in ``broadcast(...)`` exist."""

    def __init__(self, names: Iterable[str]) -> None:
        self._maps: dict[str, dict[Any, Any]] = {name: {} for name in names}

    def _entries(self, descriptor: Any) -> tuple[dict[Any, Any], str]:
        name = getattr(descriptor, "name", descriptor)
        if name not in self._maps:
            raise KeyError(
                f"no broadcast state {name!r}: this operator's broadcast stream declared "
                f"{sorted(self._maps)}"
            )
        return self._maps[name], name

    def state(self, descriptor: Any) -> BroadcastState:
        """``descriptor``: the MapStateDescriptor given to ``broadcast()`` (or its name); with
        declared types, what is put is checked against them."""
        return self._typed(BroadcastState(*self._entries(descriptor)), descriptor)

    def read_only(self, descriptor: Any) -> ReadOnlyBroadcastState:
        return self._typed(ReadOnlyBroadcastState(*self._entries(descriptor)), descriptor)

    @staticmethod
    def _typed(state: ReadOnlyBroadcastState, descriptor: Any) -> Any:
        return typed(state, descriptor) if isinstance(descriptor, StateDescriptor) else state

    def snapshot(self) -> bytes:
        store = OperatorStateStore()
        for name, entries in self._maps.items():
            store.get_broadcast_list_state(name).update([pickle.dumps(entries, protocol=5)])
        return store.snapshot()

    def restore(self, snapshots: list[bytes | None], subtask: int, parallelism: int) -> None:
        store = OperatorStateStore()
        store.restore(snapshots, subtask, parallelism)
        for name in self._maps:
            copy = store.get_broadcast_list_state(name).get()
            if copy:
                self._maps[name] = pickle.loads(copy[0])
