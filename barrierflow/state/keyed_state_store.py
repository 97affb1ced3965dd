"""What a keyed function's runtime context hands out: the backend's state objects, wrapped
where the descriptor asks for more (a time to live, a declared type, a reducing or aggregating
state), as PyFlink's state classes (``user_state.py``). One object per state name, made at the
first request.

**Threading:** the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from barrierflow.state.descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateKind,
)
from barrierflow.state.reducing_state import ValueBackedAggregatingState, ValueBackedReducingState
from barrierflow.state.schema_evolution import IncompatibleStateError
from barrierflow.state.state_ttl_config import StateTtlConfig
from barrierflow.state.ttl_state import (
    TtlListState,
    TtlMapState,
    TtlValueState,
    check_ttl_unchanged,
)
from barrierflow.state.typed_state import typed
from barrierflow.state.user_state import (
    AggregatingState,
    ReducingState,
    list_state,
    map_state,
    value_state,
)

_TTL_STATES = {StateKind.VALUE: TtlValueState, StateKind.LIST: TtlListState,
               StateKind.MAP: TtlMapState}  # fmt: skip
_USER_STATES = {StateKind.VALUE: value_state, StateKind.LIST: list_state,
                StateKind.MAP: map_state}  # fmt: skip


class StateSource(Protocol):
    """What the store asks of a keyed backend (``backend.KeyedStateBackend`` has it, and so
    has the recorder of the states a function declares)."""

    def get_state(self, descriptor: StateDescriptor) -> Any: ...

    def entries(self, name: str) -> Iterator[tuple[Any, Any]]: ...


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class KeyedStateStore:
    def __init__(
        self,
        backend: StateSource,
        now_ms: Callable[[], int] = _wall_clock_ms,
        where: str = "",
    ) -> None:
        """``where``: the operator and subtask, named by the errors of a restored state the
        function declares in a way its values cannot take."""
        self._backend = backend
        self._now_ms = now_ms
        self._where = where
        self._made: dict[str, tuple[Any, StateTtlConfig | None]] = {}  # name -> state, ttl

    def get_state(self, descriptor: StateDescriptor) -> Any:
        """The state object of ``descriptor``'s name, made at the first request (checking
        there, once, that a restored state keeps its TTL declaration); a later request under
        that name must declare the same TTL."""
        made = self._made.get(descriptor.name)
        if made is None:
            try:
                state = self._backend.get_state(descriptor)
            except IncompatibleStateError as e:
                raise IncompatibleStateError(e.change, self._where) from None
            check_ttl_unchanged(descriptor, self._backend.entries(descriptor.name))
            if descriptor.ttl is not None:
                state = _TTL_STATES[descriptor.kind](
                    state, descriptor.name, descriptor.ttl, self._now_ms
                )
            state = _USER_STATES[descriptor.kind](typed(state, descriptor))
            made = self._made[descriptor.name] = (state, descriptor.ttl)
        if made[1] != descriptor.ttl:
            raise ValueError(
                f"state {descriptor.name!r} is requested with time to live {descriptor.ttl} "
                f"after it was requested with {made[1]}; one name is one state: declare it "
                "alike everywhere, or use another name"
            )
        return made[0]

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState:
        if not isinstance(descriptor, ReducingStateDescriptor):
            raise TypeError(
                f"get_reducing_state needs a ReducingStateDescriptor, not {descriptor!r}"
            )
        return ValueBackedReducingState(self.get_state(descriptor), descriptor.reduce_function)

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState:
        if not isinstance(descriptor, AggregatingStateDescriptor):
            raise TypeError(
                f"get_aggregating_state needs an AggregatingStateDescriptor, not {descriptor!r}"
            )
        return ValueBackedAggregatingState(self.get_state(descriptor), descriptor.agg_function)
