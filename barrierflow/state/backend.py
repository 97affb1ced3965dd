"""The keyed state backend interface, and the runtime state objects users get.

**Threading:** state objects and ``snapshot()`` are called from the task thread only; the
``AsyncSnapshot`` that ``snapshot()`` returns runs once, on a background thread, and must not
read anything the task thread mutates afterwards (backends copy or freeze what it needs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from barrierflow.checkpoint.metadata import KeyGroupsHandle, StreamHandle
from barrierflow.state.descriptors import StateDescriptor, StateKind


def check_state_kind(descriptor: StateDescriptor, existing: StateKind) -> None:
    """One name, one kind of state, in every backend."""
    if existing is not descriptor.kind:
        raise ValueError(
            f"state {descriptor.name!r} was declared as {existing.value} state and is now "
            f"requested as {descriptor.kind.value} state; use another name"
        )


class KeyContext:
    """The key of the record being processed; shared by the operator and its state objects."""

    __slots__ = ("key",)

    def __init__(self) -> None:
        self.key: Any = None


class ValueState(Protocol):
    def value(self) -> Any: ...
    def update(self, value: Any) -> None: ...
    def clear(self) -> None: ...


class ListState(Protocol):
    def get(self) -> list[Any]: ...
    def add(self, value: Any) -> None: ...
    def update(self, values: Iterable[Any]) -> None: ...
    def clear(self) -> None: ...


class MapState(Protocol):
    def get(self, key: Any) -> Any: ...
    def put(self, key: Any, value: Any) -> None: ...
    def remove(self, key: Any) -> None: ...
    def contains(self, key: Any) -> bool: ...
    def items(self) -> Iterator[tuple[Any, Any]]: ...
    def keys(self) -> Iterator[Any]: ...
    def values(self) -> Iterator[Any]: ...
    def is_empty(self) -> bool: ...
    def clear(self) -> None: ...


# (write a state stream, relative file name suffix) -> handle; provided by the task so that
# backends never build storage paths themselves.
StreamWriter = Callable[[bytes, str], StreamHandle]
StreamReader = Callable[[StreamHandle], bytes]
AsyncSnapshot = Callable[[StreamWriter], list[KeyGroupsHandle]]


class KeyedStateBackend(Protocol):
    key_context: KeyContext

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The runtime state object for ``descriptor``; the same object for the same name."""

    def snapshot(self) -> AsyncSnapshot:
        """Synchronous phase: freeze a consistent view; returns the asynchronous phase."""

    def restore(self, handles: list[KeyGroupsHandle], read: StreamReader) -> None:
        """Loads the key groups of this backend's range found in ``handles``."""

    def dispose(self) -> None: ...
