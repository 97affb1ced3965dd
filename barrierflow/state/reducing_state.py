"""PyFlink's ReducingState and AggregatingState on a value state of the backend: one value per
key that ``add`` combines (so they checkpoint, rescale and restore like one, with or without TTL).

**Threading:** the task thread only.
"""

from __future__ import annotations

from typing import Any

from barrierflow.state import user_state


class ValueBackedReducingState(user_state.ReducingState):
    def __init__(self, value_state: Any, reduce_function: Any) -> None:
        self._state = value_state
        self._reduce = getattr(reduce_function, "reduce", reduce_function)

    def get(self) -> Any:
        return self._state.value()

    def add(self, value: Any) -> None:
        current = self._state.value()
        self._state.update(value if current is None else self._reduce(current, value))

    def clear(self) -> None:
        self._state.clear()


class ValueBackedAggregatingState(user_state.AggregatingState):
    def __init__(self, value_state: Any, agg_function: Any) -> None:
        self._state = value_state
        self._agg = agg_function

    def get(self) -> Any:
        accumulator = self._state.value()
        return None if accumulator is None else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        accumulator = self._state.value()
        if accumulator is None:
            accumulator = self._agg.create_accumulator()
        self._state.update(self._agg.add(value, accumulator))

    def clear(self) -> None:
        self._state.clear()
