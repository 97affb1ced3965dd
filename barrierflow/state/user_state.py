"""The state objects a keyed function gets, as PyFlink's classes: ``ValueState``,
``ListState``, ``MapState`` (with its ``state[key] = value`` protocol), ``ReducingState`` and
``AggregatingState``.

The runtime context hands out the backend's state object (typed, with TTL, as the descriptor
asks) behind one of these. The methods are the backend object's own, bound once per state
(so a call costs what it did); the classes add what PyFlink programs write on top of them:
the dunder protocol of a map state, a list state's ``add_all`` and iteration, and a type to
annotate with or check against. Performs no I/O.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
IN = TypeVar("IN")
OUT = TypeVar("OUT")
K = TypeVar("K")
V = TypeVar("V")


class State:
    """State of the current key; ``clear`` drops it."""

    def clear(self) -> None:
        raise NotImplementedError


class ValueState(State, Generic[T]):
    def value(self) -> T | None:
        raise NotImplementedError

    def update(self, value: T) -> None:
        raise NotImplementedError


class AppendingState(State, Generic[IN, OUT]):
    def get(self) -> OUT:
        raise NotImplementedError

    def add(self, value: IN) -> None:
        raise NotImplementedError


class MergingState(AppendingState[IN, OUT]):
    """Appending state whose values merge when windows do."""


class ReducingState(MergingState[T, T]):
    """One value per key that ``add`` reduces into."""


class AggregatingState(MergingState[IN, OUT]):
    """One accumulator per key that ``add`` aggregates into; ``get`` is its result."""


class ListState(MergingState[T, Iterable[T]]):
    def update(self, values: list[T]) -> None:
        raise NotImplementedError

    def add_all(self, values: list[T]) -> None:
        for value in values:
            self.add(value)

    def __iter__(self) -> Iterator[T]:
        return iter(self.get())


class MapState(State, Generic[K, V]):
    def get(self, key: K) -> V | None:
        raise NotImplementedError

    def put(self, key: K, value: V) -> None:
        raise NotImplementedError

    def put_all(self, dict_value: dict[K, V]) -> None:
        raise NotImplementedError

    def remove(self, key: K) -> None:
        raise NotImplementedError

    def contains(self, key: K) -> bool:
        raise NotImplementedError

    def items(self) -> Iterable[tuple[K, V]]:
        raise NotImplementedError

    def keys(self) -> Iterable[K]:
        raise NotImplementedError

    def values(self) -> Iterable[V]:
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError

    def __getitem__(self, key: K) -> V | None:
        """As PyFlink's: None for a key that is not there (no ``KeyError``)."""
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: K) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


# The bound classes assign the backend object's methods over the class's: a call then costs
# what a call of the backend's own did (the module docstring).


class _BoundValueState(ValueState[Any]):
    __slots__ = ("clear", "update", "value")

    def __init__(self, inner: Any) -> None:
        self.value, self.update, self.clear = inner.value, inner.update, inner.clear  # type: ignore[method-assign]


class _BoundListState(ListState[Any]):
    __slots__ = ("add", "clear", "get", "update")

    def __init__(self, inner: Any) -> None:
        self.get, self.add = inner.get, inner.add  # type: ignore[method-assign]
        self.update, self.clear = inner.update, inner.clear  # type: ignore[method-assign]


class _BoundMapState(MapState[Any, Any]):
    __slots__ = (
        "clear", "contains", "get", "is_empty", "items", "keys", "put", "put_all", "remove",
        "values",
    )  # fmt: skip

    def __init__(self, inner: Any) -> None:
        self.get, self.put, self.put_all = inner.get, inner.put, inner.put_all  # type: ignore[method-assign]
        self.remove, self.contains, self.is_empty = inner.remove, inner.contains, inner.is_empty  # type: ignore[method-assign]
        self.items, self.keys, self.values = inner.items, inner.keys, inner.values  # type: ignore[method-assign]
        self.clear = inner.clear  # type: ignore[method-assign]


def value_state(inner: Any) -> ValueState[Any]:
    """The backend's value state as a ``ValueState``."""
    return _BoundValueState(inner)


def list_state(inner: Any) -> ListState[Any]:
    """The backend's list state as a ``ListState``."""
    return _BoundListState(inner)


def map_state(inner: Any) -> MapState[Any, Any]:
    """The backend's map state as a ``MapState`` (a typed one is one already)."""
    return inner if isinstance(inner, MapState) else _BoundMapState(inner)
