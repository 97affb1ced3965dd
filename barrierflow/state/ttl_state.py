"""State with a time to live (``descriptor.enable_time_to_live``), over any backend's state
objects: each value (each list element, each map entry) is stored with the processing time of
its last write (or read, with ``OnReadAndWrite``), as a ``TtlValue``. An expired value reads as
absent and is removed when it is read (with ``ReturnExpiredIfNotCleanedUp``, that one read still
returns it); that is the only cleanup: values nobody reads again stay, in state and in
checkpoints, until they are overwritten or cleared.

A state without TTL never comes here: its path is unchanged. Enabling or disabling TTL on a
state that a restore brought back is refused, naming the state, as Flink refuses the change:
``check_ttl_unchanged`` looks at one stored value when the state object is made (the stamp tells
how it was written), so neither path pays for it per access. A value found without its stamp at
a read (``_unwrap``) is refused too.

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.state_ttl_config import StateTtlConfig, StateVisibility, UpdateType


class TtlValue(NamedTuple):
    value: Any
    written_ms: int


def check_ttl_unchanged(descriptor: StateDescriptor, entries: Iterator[tuple[Any, Any]]) -> None:
    """Refuses ``descriptor`` if the first of the state's stored ``entries`` (a backend's
    ``entries(name)``: key, value) was written with a time to live and the descriptor has none,
    or the other way round. Every value of a state is written under one declaration, so one
    tells; a state with nothing stored has nothing to misread."""
    try:
        first = next(entries, None)
    finally:
        close = getattr(entries, "close", None)
        if close is not None:
            close()
    if first is None:
        return
    stored = first[1]
    if descriptor.kind is not StateKind.VALUE:
        if not stored:  # an empty list or map: no element to tell
            return
        stored = stored[0] if descriptor.kind is StateKind.LIST else next(iter(stored.values()))
    stamped = type(stored) is TtlValue
    if stamped == (descriptor.ttl is not None):
        return
    was, now = ("with", "without") if stamped else ("without", "with")
    raise ValueError(
        f"state {descriptor.name!r} is declared {now} a time to live, but the restored snapshot "
        f"holds it {was} one (written by a version of the job that declared it so); enabling or "
        "disabling TTL on a state cannot be restored (as in Flink): declare it as before, or "
        "give the state another name (its old values are then dropped)"
    )


class _Ttl:
    def __init__(self, name: str, config: StateTtlConfig, now_ms: Callable[[], int]) -> None:
        self._name = name
        self._ttl = config.ttl_ms
        self._refresh_on_read = config.update_type is UpdateType.OnReadAndWrite
        visibility = config.state_visibility
        self._return_expired = visibility is StateVisibility.ReturnExpiredIfNotCleanedUp
        self._now = now_ms

    def _stamped(self, value: Any) -> TtlValue:
        return TtlValue(value, self._now())

    def _unwrap(self, stored: Any) -> TtlValue:
        if type(stored) is not TtlValue:
            raise ValueError(
                f"state {self._name!r} is declared with a time to live, but holds a value "
                "written without one (by a job that declared it without TTL); enabling or "
                "disabling TTL needs a state of another name"
            )
        return stored

    def _expired(self, stored: TtlValue) -> bool:
        return stored.written_ms + self._ttl <= self._now()


class TtlValueState(_Ttl):
    def __init__(
        self, state: Any, name: str, config: StateTtlConfig, now_ms: Callable[[], int]
    ) -> None:
        super().__init__(name, config, now_ms)
        self._state = state

    def value(self) -> Any:
        stored = self._state.value()
        if stored is None:
            return None
        stored = self._unwrap(stored)
        if self._expired(stored):
            self._state.clear()
            return stored.value if self._return_expired else None
        if self._refresh_on_read:
            self._state.update(self._stamped(stored.value))
        return stored.value

    def update(self, value: Any) -> None:
        if value is None:
            self._state.clear()
        else:
            self._state.update(self._stamped(value))

    def clear(self) -> None:
        self._state.clear()


class TtlListState(_Ttl):
    """Each element lives on its own."""

    def __init__(
        self, state: Any, name: str, config: StateTtlConfig, now_ms: Callable[[], int]
    ) -> None:
        super().__init__(name, config, now_ms)
        self._state = state

    def get(self) -> list[Any]:
        stored = [self._unwrap(s) for s in self._state.get()]
        live = [s for s in stored if not self._expired(s)]
        if self._refresh_on_read and live:
            self._state.update([self._stamped(s.value) for s in live])
        elif len(live) != len(stored):
            self._state.update(live)
        return [s.value for s in (stored if self._return_expired else live)]

    def add(self, value: Any) -> None:
        self._state.add(self._stamped(value))

    def update(self, values: Iterable[Any]) -> None:
        self._state.update([self._stamped(v) for v in values])

    def clear(self) -> None:
        self._state.clear()


class TtlMapState(_Ttl):
    """Each entry lives on its own."""

    def __init__(
        self, state: Any, name: str, config: StateTtlConfig, now_ms: Callable[[], int]
    ) -> None:
        super().__init__(name, config, now_ms)
        self._state = state

    def _live(self, key: Any, stored: Any) -> TtlValue | None:
        value = self._unwrap(stored)
        if self._expired(value):
            self._state.remove(key)
            return value if self._return_expired else None
        if self._refresh_on_read:
            self._state.put(key, self._stamped(value.value))
        return value

    def get(self, key: Any) -> Any:
        stored = self._state.get(key)
        live = None if stored is None else self._live(key, stored)
        return None if live is None else live.value

    def put(self, key: Any, value: Any) -> None:
        self._state.put(key, self._stamped(value))

    def put_all(self, mapping: dict[Any, Any]) -> None:
        for key, value in mapping.items():
            self.put(key, value)

    def remove(self, key: Any) -> None:
        self._state.remove(key)

    def contains(self, key: Any) -> bool:
        return self.get(key) is not None

    def items(self) -> Iterator[tuple[Any, Any]]:
        found = []
        for key, stored in self._state.items():
            live = self._live(key, stored)
            if live is not None:
                found.append((key, live.value))
        return iter(found)

    def keys(self) -> Iterator[Any]:
        return iter([k for k, _ in self.items()])

    def values(self) -> Iterator[Any]:
        return iter([v for _, v in self.items()])

    def is_empty(self) -> bool:
        return not any(True for _ in self.items())

    def clear(self) -> None:
        self._state.clear()
