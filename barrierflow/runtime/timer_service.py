"""The timers of one keyed operator subtask: event-time timers fire when the watermark passes
them, processing-time timers when the wall clock does (Flink's ``InternalTimerServiceImpl``).

Timers are keyed state. Each lives twice: in a map state of its key (``TIMERS``: (time domain,
time, namespace) -> True), which the state backend checkpoints, rescales by key group and
restores like any other state, in both backends; and in an in-memory queue per time domain
(``TimerQueue``), which orders them and is rebuilt from the state after a restore. So a
checkpoint holds exactly the timers that had not fired at its barrier, a restore at another
parallelism gets the timers of the key groups it now owns, and timers that fired after the
restored checkpoint fire again (their output is covered by the sinks' exactly-once protocol like
any other output). Processing-time timers that came due while the job was down fire at the first
look after the restore.

A namespace tells apart timers of the same key and time where an operator needs it (a window
operator's timers carry their window); a ``KeyedProcessFunction``'s have none.

The state is created at the first registration, so an operator that never sets a timer stores
nothing. Registering a timer that exists already writes nothing.

**Threading:** the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterator
from typing import Any

from barrierflow.datastream.functions.one_input import TimeDomain
from barrierflow.eventtime.watermark_valve import MIN_WATERMARK
from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.descriptors import MapStateDescriptor
from barrierflow.state.key_groups import KeyGroupCache
from barrierflow.state.timer_queue import Timer, TimerQueue

# Reserved state name; user state names starting with "__" may collide with barrierflow's own.
TIMERS = MapStateDescriptor("__timers__")

EVENT_TIME = TimeDomain.EVENT_TIME.value
PROCESSING_TIME = TimeDomain.PROCESSING_TIME.value


def _check_time(timestamp: Any, what: str) -> int:
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TypeError(
            f"{what} takes a time in epoch milliseconds (an int), not "
            f"{type(timestamp).__name__} {timestamp!r:.100}"
        )
    return timestamp


class InternalTimerService:
    """Also the ``TimerService`` a ``KeyedProcessFunction`` gets (its timers have no
    namespace)."""

    def __init__(self, backend: KeyedStateBackend, max_parallelism: int) -> None:
        self._backend = backend
        self._key_context = backend.key_context
        self._key_group = KeyGroupCache(max_parallelism).key_group
        self._queues = (TimerQueue(), TimerQueue())  # by time domain value
        self._state: Any = None  # the timers' map state: made at the first registration
        self.watermark = MIN_WATERMARK

    def restore(self) -> None:
        """Rebuilds the queues from the restored state; call after the backend's restore."""
        key_group, queues = self._key_group, self._queues
        for key, timers in self._backend.entries(TIMERS.name):
            kg = key_group(key)
            for domain, timestamp, namespace in timers:
                queues[domain].add(Timer(timestamp, key, namespace), kg)
        if len(self):
            self._state = self._backend.get_state(TIMERS)

    def __len__(self) -> int:
        return len(self._queues[0]) + len(self._queues[1])

    # --- registering, on the current key ------------------------------------------------------

    def register(self, domain: int, timestamp: int, namespace: Hashable | None = None) -> None:
        key = self._key_context.key
        timer = Timer(timestamp, key, namespace)
        if self._queues[domain].add(timer, self._key_group(key)):
            state = self._state
            if state is None:
                state = self._state = self._backend.get_state(TIMERS)
            state.put((domain, timestamp, namespace), True)

    def delete(self, domain: int, timestamp: int, namespace: Hashable | None = None) -> None:
        if self._queues[domain].delete(Timer(timestamp, self._key_context.key, namespace)):
            self._state.remove((domain, timestamp, namespace))

    def forget_event_time_timers(self) -> None:
        """Drops the queued event-time timers, keeping their state: for an operator that fires
        them itself from then on and keeps their state up to date (the window operator's
        batch path)."""
        self._queues = (TimerQueue(), self._queues[PROCESSING_TIME])

    # --- firing -------------------------------------------------------------------------------

    def advance_watermark(self, watermark: int) -> Iterator[Timer]:
        """The event-time timers at or before ``watermark``, earliest first, each with its key
        made current and already removed (a timer may register itself again)."""
        self.watermark = watermark
        return self._fire(EVENT_TIME, watermark)

    def fire_processing_time(self, now_ms: int) -> Iterator[Timer]:
        return self._fire(PROCESSING_TIME, now_ms)

    def next_processing_time(self) -> int | None:
        return self._queues[PROCESSING_TIME].next_timestamp()

    def _fire(self, domain: int, up_to: int) -> Iterator[Timer]:
        key_context = self._key_context
        for timer in self._queues[domain].pop_due(up_to):
            key_context.key = timer.key
            self._state.remove((domain, timer.timestamp, timer.namespace))
            yield timer

    # --- PyFlink's TimerService ---------------------------------------------------------------

    def current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000

    def current_watermark(self) -> int:
        return self.watermark

    def register_event_time_timer(self, timestamp: int) -> None:
        self.register(EVENT_TIME, _check_time(timestamp, "register_event_time_timer"))

    def register_processing_time_timer(self, timestamp: int) -> None:
        self.register(PROCESSING_TIME, _check_time(timestamp, "register_processing_time_timer"))

    def delete_event_time_timer(self, timestamp: int) -> None:
        self.delete(EVENT_TIME, _check_time(timestamp, "delete_event_time_timer"))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self.delete(PROCESSING_TIME, _check_time(timestamp, "delete_processing_time_timer"))
