"""The window operator's keyed state: its names, and the copy of the aligned-window batch path's
accumulators into it and out of it.

Both paths of the window operator leave the same state in a snapshot: per key, a map
``CONTENTS`` (window -> accumulator) and the windows' event-time timers in ``TIMERS`` (the
timer service's state, (domain, window end - 1, window) -> True). So a checkpoint or savepoint
taken by either path restores into either, at any parallelism, in both backends.

**Threading:** the task thread only. **Lifecycle:** ``write_accumulators`` at each snapshot's
synchronous phase; ``read_accumulators`` once, after the backend's restore.
"""

from __future__ import annotations

from typing import Any

from barrierflow.runtime.timer_service import EVENT_TIME, TIMERS
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.descriptors import ListStateDescriptor, MapStateDescriptor
from barrierflow.windowing.aligned_windows import AlignedWindowAccumulators, AlignedWindows
from barrierflow.windowing.windows import TimeWindow

CONTENTS = MapStateDescriptor("__window_contents__")
ELEMENTS = ListStateDescriptor("__window_elements__")
TRIGGER_STATE = MapStateDescriptor("__window_trigger__")  # (state name, window) -> value


def write_accumulators(
    backend: KeyedStateBackend, accumulators: AlignedWindowAccumulators, written: set[Any]
) -> set[Any]:
    """Makes the keyed state hold exactly the open accumulators and their windows' timers.
    ``written``: the keys the previous call wrote (their windows may have fired since);
    returns the keys this call wrote, for the next.

    This runs in the snapshot's synchronous phase, once per open (key, window): one ``put``
    into each state per window, and no container made per key beyond the backend's own."""
    contents, timers = backend.get_state(CONTENTS), backend.get_state(TIMERS)
    key_context = backend.key_context
    keys: set[Any] = set()
    seen = keys.__contains__
    for window, accumulators_of_keys in accumulators.open_windows():
        timer = (EVENT_TIME, window.end - 1, window)
        for key, accumulator in accumulators_of_keys.items():
            key_context.key = key
            if not seen(key):  # the key's first window: what the state held for it goes
                keys.add(key)
                contents.clear()
                timers.clear()
            contents.put(window, accumulator)
            timers.put(timer, True)
    for key in written.difference(keys):  # every window of theirs fired
        key_context.key = key
        contents.clear()
        timers.clear()
    return keys


def read_accumulators(
    backend: KeyedStateBackend, windows: AlignedWindows
) -> list[tuple[Any, TimeWindow, Any]] | None:
    """The restored (key, window, accumulator) entries, in the order of the restored timers;
    None if the state is not the batch path's to take over (trigger state, buffered elements,
    a timer other than a window's end, a window not of ``windows``): then the general path
    runs it."""
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
