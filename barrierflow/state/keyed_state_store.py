"""What a keyed function's runtime context hands out: the backend's state objects, wrapped
where the descriptor asks for more (a time to live, a reducing or aggregating state). One
object per state name, made at the first request.

**Threading:** the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from barrierflow.state.backend import KeyedStateBackend
from barrierflow.state.descriptors import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    StateKind,
)
from barrierflow.state.reducing_state import AggregatingState, ReducingState
from barrierflow.state.ttl_state import TtlListState, TtlMapState, TtlValueState

_TTL_STATES = {StateKind.VALUE: TtlValueState, StateKind.LIST: TtlListState,
               StateKind.MAP: TtlMapState}  # fmt: skip


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class KeyedStateStore:
    def __init__(
        self, backend: KeyedStateBackend, now_ms: Callable[[], int] = _wall_clock_ms
    ) -> None:
        self._backend = backend
        self._now_ms = now_ms
        self._made: dict[str, Any] = {}

    def get_state(self, descriptor: StateDescriptor) -> Any:
        made = self._made.get(descriptor.name)
        if made is None:
            made = self._backend.get_state(descriptor)
            if descriptor.ttl is not None:
                made = _TTL_STATES[descriptor.kind](
                    made, descriptor.name, descriptor.ttl, self._now_ms
                )
            self._made[descriptor.name] = made
        return made

    def get_reducing_state(self, descriptor: ReducingStateDescriptor) -> ReducingState:
        if not isinstance(descriptor, ReducingStateDescriptor):
            raise TypeError(
                f"get_reducing_state needs a ReducingStateDescriptor, not {descriptor!r}"
            )
        return ReducingState(self.get_state(descriptor), descriptor.reduce_function)

    def get_aggregating_state(self, descriptor: AggregatingStateDescriptor) -> AggregatingState:
        if not isinstance(descriptor, AggregatingStateDescriptor):
            raise TypeError(
                f"get_aggregating_state needs an AggregatingStateDescriptor, not {descriptor!r}"
            )
        return AggregatingState(self.get_state(descriptor), descriptor.agg_function)
