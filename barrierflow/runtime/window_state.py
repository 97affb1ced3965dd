"""The window operator's keyed state: its names, and the aligned-window batch path's
accumulators in it, in two layouts.

- **The general layout**, both paths': per key, a map ``CONTENTS`` (window -> accumulator) and
  the windows' event-time timers in ``TIMERS`` (the timer service's state, (domain, window
  end - 1, window) -> True). Savepoints and canonical snapshots of the batch path are written in
  it, so that any reader (the general path, RocksDB, the state processor) takes them as ever.
- **Window tables**, the batch path's checkpoints on the heap backend: one value state per open
  window, named after it (``__window__/<start>/<end>``), whose table is the batch path's own
  dict of that window (key -> accumulator, in the order the keys fire), handed to the backend
  whole for its snapshot. A checkpoint then costs a dict copy per window and a pickle of it,
  not a ``put`` per (key, window) into two states (docs/adr/0024-window-tables-in-checkpoints.md).

Either layout restores into either path, at any parallelism: the batch path reads both; the
general path turns window tables into its own layout when it restores them.

**Threading:** the task thread only. **Lifecycle:** ``put_window_tables`` or
``write_accumulators`` at each snapshot's synchronous phase, ``drop_window_tables`` or
``clear_keys`` right after; ``read_accumulators`` and ``release_restored`` (batch path) or
``window_tables_into_contents`` (general path) once, after the backend's restore.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrierflow.runtime.timer_service import EVENT_TIME, TIMERS, InternalTimerService
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.windowing.aligned_windows import AlignedWindowAccumulators, AlignedWindows
from barrierflow.windowing.windows import TimeWindow

CONTENTS = MapStateDescriptor("__window_contents__")
ELEMENTS = ListStateDescriptor("__window_elements__")
TRIGGER_STATE = MapStateDescriptor("__window_trigger__")  # (state name, window) -> value
WINDOW_TABLE_PREFIX = "__window__/"  # + "<start>/<end>": the batch path's window tables


def window_table_name(window: TimeWindow) -> str:
    return f"{WINDOW_TABLE_PREFIX}{window.start}/{window.end}"


def window_tables(backend: KeyedStateBackend) -> list[tuple[str, TimeWindow]]:
    """The window tables the backend holds, by window end (the order they fire in)."""
    found = []
    for name in backend.state_names():
        if name.startswith(WINDOW_TABLE_PREFIX):
            start, end = name[len(WINDOW_TABLE_PREFIX) :].split("/")
            found.append((name, TimeWindow(int(start), int(end))))
    return sorted(found, key=lambda named: named[1].end)


def put_window_tables(
    backend: HeapKeyedStateBackend, accumulators: AlignedWindowAccumulators
) -> list[str]:
    """Hands each open window's dict to the backend as a table, for one snapshot; returns
    their names, for ``drop_window_tables`` once the snapshot's synchronous phase copied
    them."""
    names = []
    for window, accumulators_of_keys in accumulators.open_windows():
        names.append(window_table_name(window))
        backend.put_table(names[-1], accumulators_of_keys)
    return names


def drop_window_tables(backend: HeapKeyedStateBackend, names: list[str]) -> None:
    for name in names:
        backend.drop_table(name)


def write_accumulators(
    backend: KeyedStateBackend, accumulators: AlignedWindowAccumulators
) -> set[Any]:
    """Writes the open accumulators and their windows' timers into the general layout, for a
    snapshot in the canonical format; returns the keys written, for ``clear_keys`` once the
    snapshot is taken (the batch path keeps its windows itself)."""
    contents, timers = backend.get_state(CONTENTS), backend.get_state(TIMERS)
    key_context = backend.key_context
    keys: set[Any] = set()
    for window, accumulators_of_keys in accumulators.open_windows():
        timer = (EVENT_TIME, window.end - 1, window)
        for key, accumulator in accumulators_of_keys.items():
            key_context.key = key
            keys.add(key)
            contents.put(window, accumulator)
            timers.put(timer, True)
    return keys


def clear_keys(backend: KeyedStateBackend, keys: Iterable[Any]) -> None:
    """Removes the windows and timers of ``keys`` from the general layout."""
    contents, timers = backend.get_state(CONTENTS), backend.get_state(TIMERS)
    key_context = backend.key_context
    for key in keys:
        key_context.key = key
        contents.clear()
        timers.clear()


def read_accumulators(
    backend: KeyedStateBackend, windows: AlignedWindows
) -> list[tuple[Any, TimeWindow, Any]] | None:
    """The restored (key, window, accumulator) entries of both layouts: the general layout's in
    the order of its restored timers, then the window tables', each in its own order. None if
    the state is not the batch path's to take over (trigger state, buffered elements, a timer
    other than a window's end, a window not of ``windows``): then the general path runs it."""
    entries = _general_entries(backend, windows)
    tables = window_tables(backend)
    if entries is None or not all(windows.holds(window) for _, window in tables):
        return None
    for name, window in tables:
        entries.extend((key, window, accumulator) for key, accumulator in backend.entries(name))
    return entries


def release_restored(backend: HeapKeyedStateBackend) -> None:
    """Empties both layouts once the batch path took their windows over: from then on it keeps
    them itself, and a snapshot writes them afresh."""
    clear_keys(backend, [key for key, _ in backend.entries(CONTENTS.name)])
    drop_window_tables(backend, [name for name, _ in window_tables(backend)])


def window_tables_into_contents(backend: KeyedStateBackend, timers: InternalTimerService) -> None:
    """The restored window tables into the general path's layout: each (key, window) into
    ``CONTENTS`` and its end's timer registered, window by window in each table's order (the
    order in which the batch path would have fired them). The tables are emptied."""
    contents, key_context = backend.get_state(CONTENTS), backend.key_context
    for name, window in window_tables(backend):
        table = backend.get_state(ValueStateDescriptor(name))
        for key, accumulator in list(backend.entries(name)):
            key_context.key = key
            contents.put(window, accumulator)
            timers.register(EVENT_TIME, window.end - 1, window)
            table.clear()


def _general_entries(
    backend: KeyedStateBackend, windows: AlignedWindows
) -> list[tuple[Any, TimeWindow, Any]] | None:
    if any(True for _ in backend.entries(TRIGGER_STATE.name)) or any(
        True for _ in backend.entries(ELEMENTS.name)
    ):
        return None
    contents = dict(backend.entries(CONTENTS.name))
    entries: list[tuple[Any, TimeWindow, Any]] = []
    for key, timers in backend.entries(TIMERS.name):
        accumulators = contents.get(key, {})
        for domain, timestamp, window in timers:
            if (
                domain != EVENT_TIME
                or not windows.holds(window)
                or timestamp != window.end - 1
                or window not in accumulators
            ):
                return None
            entries.append((key, window, accumulators[window]))
    if len(entries) != sum(map(len, contents.values())):
        return None  # a window without its timer
    return entries
