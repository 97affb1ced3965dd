"""The keyed state backend interface, and what its state objects offer the runtime (Flink's
``InternalValueState``...; users get them behind ``user_state.py``'s classes).

**Threading:** state objects and ``snapshot()`` are called from the task thread only; the
``AsyncSnapshot`` that ``snapshot()`` returns runs once, on a background thread, and must not
read anything the task thread mutates afterwards (backends copy or freeze what it needs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from barrierflow.checkpoint.metadata import FileHandle, KeyedStateHandle, StreamHandle
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
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


class InternalValueState(Protocol):
    def value(self) -> Any: ...
    def update(self, value: Any) -> None: ...
    def clear(self) -> None: ...


class InternalListState(Protocol):
    def get(self) -> list[Any]: ...
    def add(self, value: Any) -> None: ...
    def update(self, values: Iterable[Any]) -> None: ...
    def clear(self) -> None: ...


class InternalMapState(Protocol):
    def get(self, key: Any) -> Any: ...
    def put(self, key: Any, value: Any) -> None: ...
    def remove(self, key: Any) -> None: ...
    def contains(self, key: Any) -> bool: ...
    def items(self) -> Iterator[tuple[Any, Any]]: ...
    def keys(self) -> Iterator[Any]: ...
    def values(self) -> Iterator[Any]: ...
    def is_empty(self) -> bool: ...
    def clear(self) -> None: ...


class SnapshotStreams(Protocol):
    """Where an asynchronous snapshot writes, provided by the task so that backends never build
    storage paths themselves (``checkpoint/state_streams.py``)."""

    def write(self, data: bytes | memoryview, kind: str) -> StreamHandle:
        """A stream of this checkpoint alone; ``kind`` ends its file name."""

    def upload_shared(self, local_path: str) -> FileHandle:
        """Uploads an immutable local file under ``shared/``, where later checkpoints may
        reference it."""


class RestoreStreams(Protocol):
    """Where a restore reads from, provided by the task."""

    shares_storage: bool  # the restored checkpoint's shared files are this job's own

    def read(self, handle: StreamHandle) -> bytes: ...

    def download(self, handle: StreamHandle, local_path: str) -> None:
        """Writes the stream into a local file, checked against the handle's size and sum."""


AsyncSnapshot = Callable[[SnapshotStreams], Sequence[KeyedStateHandle]]


class KeyedStateBackend(Protocol):
    key_context: KeyContext

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The runtime state object for ``descriptor``; the same object for the same name."""

    def snapshot(self, checkpoint_id: int, options: CheckpointOptions) -> AsyncSnapshot:
        """Synchronous phase: freeze a consistent view; returns the asynchronous phase.

        ``options.snapshot_format``: CANONICAL asks for the backend-neutral key-group format
        (``checkpoint/key_group_format.py``) whatever the backend's own format is."""

    def restore(self, handles: list[KeyedStateHandle], streams: RestoreStreams) -> None:
        """Loads the key groups of this backend's range found in ``handles``; call once, before
        any state is used."""

    def entries(self, name: str) -> Iterator[tuple[Any, Any]]:
        """Every key's value of state ``name`` in this backend (a map state's value: a dict),
        for an operator that rebuilds an in-memory index after a restore (its timers)."""

    def state_names(self) -> list[str]:
        """The names of the states this backend holds, restored or declared."""

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Incremental backends may reference this checkpoint's uploads from now on."""

    def notify_checkpoint_aborted(
        self, checkpoint_id: int, references_released: bool = False
    ) -> None:
        """``references_released``: it was aborted for referencing files already released,
        so the files this backend believes confirmed may be gone."""

    def dispose(self) -> None: ...
