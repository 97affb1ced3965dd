"""The functions a program gives the state processor, with Flink's names: a
``KeyedStateReaderFunction`` turns each key's state into rows, a ``KeyedStateBootstrapFunction``
writes state for each row of a DataFrame, as a ``KeyedProcessFunction`` does for each record.

**Threading:** each runs in one Spark task at a time, on that task's thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrierflow.datastream.functions.one_input import Function, RuntimeContext, TimeDomain

_EVENT_TIME = TimeDomain.EVENT_TIME.value
_PROCESSING_TIME = TimeDomain.PROCESSING_TIME.value


class KeyedStateReaderFunction(Function):
    """Reads the keyed state of one operator, key by key (Flink's ``KeyedStateReaderFunction``).

    ``open(runtime_context)`` declares the states to read, as the operator's function declared
    them (``runtime_context.get_state(ValueStateDescriptor(...))``; a declared type that
    evolved from the snapshot's is migrated as it is read). ``read_key(key, ctx)`` then runs
    once per key, with those states reading that key's values, and yields rows: ``Row``\\ s
    with field names, dicts or tuples. The states are read-only."""

    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def read_key(self, key: Any, ctx: KeyedStateReaderFunction.Context) -> Iterable[Any]:
        raise NotImplementedError

    class Context:
        """What ``read_key`` sees besides the states: the key's timers."""

        def __init__(self, key: Any, timers: list[tuple[int, int, Any]]) -> None:
            self._key = key
            self._timers = timers  # (time domain, time, namespace)

        def get_current_key(self) -> Any:
            return self._key

        def registered_event_time_timers(self) -> set[int]:
            return {t for domain, t, _ in self._timers if domain == _EVENT_TIME}

        def registered_processing_time_timers(self) -> set[int]:
            return {t for domain, t, _ in self._timers if domain == _PROCESSING_TIME}


class KeyedStateBootstrapFunction(Function):
    """Writes the keyed state of a new operator from the rows of a DataFrame (Flink's
    ``KeyedStateBootstrapFunction``): ``open(runtime_context)`` declares the states as the
    operator that will restore them does, and ``process_element(row, ctx)`` writes the state
    of the row's key (``ctx.get_current_key()``), and may set timers
    (``ctx.timer_service().register_event_time_timer(t)``)."""

    def process_element(self, value: Any, ctx: KeyedStateBootstrapFunction.Context) -> None:
        raise NotImplementedError

    class Context:
        def __init__(self, key_context: Any, timer_service: Any) -> None:
            self._key_context = key_context
            self._timer_service = timer_service

        def get_current_key(self) -> Any:
            return self._key_context.key

        def timer_service(self) -> Any:
            return self._timer_service
