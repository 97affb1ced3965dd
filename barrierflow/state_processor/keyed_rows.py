"""The rows a read of keyed state makes of each key's stored values: one column per declared
state (``StateColumns``), whatever a ``KeyedStateReaderFunction`` yields
(``ReaderFunctionRows``), the contents of each open window (``WindowRows``) or each pending
timer (``TimerRows``).

Each is made on the driver, travels to the executors with the Spark task, and is opened there
once per task (``open``) before it makes rows of the keys of that task's key groups
(``rows(key, values)``: the key's stored value of each state, as the key-group format holds
it). A state declared with a type that evolved from the snapshot's is migrated as it is read
(``state/schema_evolution.py``); values stored with a time to live come without their stamp.
Rows are plain Python; ``spark_types.converter`` makes them Spark's.

**Threading:** a Spark task's thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from barrierflow.datastream.functions.one_input import RuntimeContext, TimeDomain
from barrierflow.runtime.timer_service import TIMERS
from barrierflow.runtime.window_state import CONTENTS, ELEMENTS
from barrierflow.state.descriptors import StateDescriptor, StateKind
from barrierflow.state.schema_evolution import (
    Convert,
    IncompatibleStateError,
    StateSchemas,
    migrate_stored,
)
from barrierflow.state.ttl_state import TtlValue
from barrierflow.state_processor.functions import KeyedStateReaderFunction
from barrierflow.windowing.windows import CountWindow, TimeWindow


class KeyedRows(Protocol):
    """What a read makes of each key; ``states``: the states it needs (None: all)."""

    states: frozenset[str] | None

    def open(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        """Before the first key: the snapshot's states (name -> kind) and declared types."""

    def rows(self, key: Any, values: dict[str, Any]) -> Iterable[tuple]: ...


def plain(kind: StateKind, stored: Any) -> Any:
    """A stored value without its time-to-live stamps."""
    if kind is StateKind.VALUE:
        return stored.value if type(stored) is TtlValue else stored
    if kind is StateKind.LIST:
        return [e.value if type(e) is TtlValue else e for e in stored]
    return {k: v.value if type(v) is TtlValue else v for k, v in stored.items()}


class _Reader:
    """One state as the snapshot holds it, read as ``descriptor`` declares it."""

    __slots__ = ("convert", "kind", "name")

    def __init__(self, descriptor: StateDescriptor, convert: Convert | None) -> None:
        self.name, self.kind, self.convert = descriptor.name, descriptor.kind, convert

    def read(self, values: dict[str, Any]) -> Any:
        stored = values.get(self.name)
        if stored is None:
            return None
        if self.convert is not None:
            stored = migrate_stored(self.kind, stored, self.convert)
        return plain(self.kind, stored)


def _readers(
    descriptors: Iterable[StateDescriptor],
    kinds: dict[str, str],
    types: dict[str, str],
    where: str,
) -> list[_Reader]:
    schemas = StateSchemas()
    schemas.restored(kinds, types)
    readers = []
    for descriptor in descriptors:
        try:
            change = schemas.declare(descriptor)
        except IncompatibleStateError as e:
            raise IncompatibleStateError(e.change, where) from None
        readers.append(_Reader(descriptor, change.convert))
    return readers


class StateColumns:
    """A row per key: the key, then each state's value (a list state's list, a map state's
    dict); keys that hold none of them make no row."""

    def __init__(self, descriptors: list[StateDescriptor], where: str) -> None:
        self.descriptors = descriptors
        self.states = frozenset(d.name for d in descriptors)
        self._where = where
        self._readers: list[_Reader] = []

    def open(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        self._readers = _readers(self.descriptors, kinds, types, self._where)

    def rows(self, key: Any, values: dict[str, Any]) -> Iterable[tuple]:
        return ((key, *[r.read(values) for r in self._readers]),)


class _ReadOnlyState:
    """A state of the current key, for a reader function: reads only."""

    def __init__(self, reader: _Reader, current: list[dict[str, Any]]) -> None:
        self._reader, self._current = reader, current

    def _value(self) -> Any:
        return self._reader.read(self._current[0])

    # value state, reducing and aggregating state
    def value(self) -> Any:
        return self._value()

    # list state (and reducing/aggregating get)
    def get(self, key: Any = None) -> Any:
        found = self._value()
        if self._reader.kind is StateKind.MAP:
            return None if found is None else found.get(key)
        return [] if found is None and self._reader.kind is StateKind.LIST else found

    # map state
    def contains(self, key: Any) -> bool:
        return key in (self._value() or {})

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list((self._value() or {}).items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self._value() or {}))

    def values(self) -> Iterator[Any]:
        return iter(list((self._value() or {}).values()))

    def is_empty(self) -> bool:
        return not self._value()

    def __iter__(self) -> Iterator[Any]:
        return self.keys()

    def _refuse(self, *args: Any) -> None:
        raise RuntimeError(
            f"state {self._reader.name!r} is read-only in a KeyedStateReaderFunction; change "
            "state with a SavepointWriter and a KeyedStateBootstrapFunction"
        )

    update = add = put = put_all = remove = clear = _refuse


class _Aggregated(_ReadOnlyState):
    def __init__(self, reader: _Reader, current: list[dict[str, Any]], function: Any) -> None:
        super().__init__(reader, current)
        self._function = function

    def get(self, key: Any = None) -> Any:
        accumulator = self._value()
        return None if accumulator is None else self._function.get_result(accumulator)


class _ReadOnlyStore:
    """The keyed state a reader function's runtime context hands out."""

    def __init__(self, kinds: dict[str, str], types: dict[str, str], where: str) -> None:
        self._kinds, self._types, self._where = kinds, types, where
        self.current: list[dict[str, Any]] = [{}]  # the current key's values, in a cell
        self._made: dict[str, _ReadOnlyState] = {}

    def declared(self) -> Iterable[str]:
        return self._made.keys()

    def _reader(self, descriptor: StateDescriptor) -> _Reader:
        (reader,) = _readers([descriptor], self._kinds, self._types, self._where)
        return reader

    def get_state(self, descriptor: StateDescriptor) -> _ReadOnlyState:
        made = self._made.get(descriptor.name)
        if made is None:
            made = self._made[descriptor.name] = _ReadOnlyState(
                self._reader(descriptor), self.current
            )
        return made

    def get_reducing_state(self, descriptor: StateDescriptor) -> _ReadOnlyState:
        return self.get_state(descriptor)

    def get_aggregating_state(self, descriptor: Any) -> _ReadOnlyState:
        made = self._made.get(descriptor.name)
        if made is None:
            reader = self._reader(descriptor)
            made = _Aggregated(reader, self.current, descriptor.agg_function)
            self._made[descriptor.name] = made
        return made


class ReaderFunctionRows:
    """Whatever a ``KeyedStateReaderFunction`` yields for each key (a key without any value of
    the states it declared is not given to it)."""

    states = None

    def __init__(self, function: KeyedStateReaderFunction, uid: str, max_parallelism: int) -> None:
        self._function = function
        self._uid = uid
        self._max_parallelism = max_parallelism
        self._store: _ReadOnlyStore | None = None

    def open(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        self._store = _ReadOnlyStore(kinds, types, f"reading operator {self._uid!r}")
        context = RuntimeContext(
            self._uid, 0, 1, self._store, max_parallelism=self._max_parallelism
        )
        self._function.open(context)

    def rows(self, key: Any, values: dict[str, Any]) -> Iterable[Any]:
        store = self._store
        if not any(name in values for name in store.declared()):
            return ()
        store.current[0] = values
        timers = list(values.get(TIMERS.name, {}))
        found = self._function.read_key(key, KeyedStateReaderFunction.Context(key, timers))
        return () if found is None else found


def _window_columns(window: Any) -> tuple[str, int | None, int | None]:
    if isinstance(window, TimeWindow):
        return f"[{window.start}, {window.end})", window.start, window.end
    if isinstance(window, CountWindow):
        return f"count window {window.id}", None, None
    return str(window), None, None


class WindowRows:
    """A row per key and open window: the key, the window (its description, start and end for
    a time window) and its contents (the accumulator, or the elements where the window keeps
    every element)."""

    states = frozenset({CONTENTS.name, ELEMENTS.name})

    def open(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        pass

    def rows(self, key: Any, values: dict[str, Any]) -> Iterable[tuple]:
        for window, accumulator in values.get(CONTENTS.name, {}).items():
            yield (key, *_window_columns(window), accumulator)
        elements: dict[Any, list[Any]] = {}
        for window, element in values.get(ELEMENTS.name, ()):
            elements.setdefault(window, []).append(element)
        for window, contents in elements.items():
            yield (key, *_window_columns(window), contents)


class TimerRows:
    """A row per pending timer: the key, its time domain, its time and, for a window's timer,
    the window's start and end."""

    states = frozenset({TIMERS.name})

    def open(self, kinds: dict[str, str], types: dict[str, str]) -> None:
        pass

    def rows(self, key: Any, values: dict[str, Any]) -> Iterable[tuple]:
        for domain, timestamp, namespace in sorted(values.get(TIMERS.name, {}), key=_order):
            _, start, end = _window_columns(namespace) if namespace is not None else (0, None, None)
            yield key, TimeDomain(domain).name.lower().replace("_", "-"), timestamp, start, end


def _order(timer: tuple[int, int, Any]) -> tuple[int, int]:
    return timer[0], timer[1]
