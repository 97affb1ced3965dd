"""Internal: keyed and operator state, key groups, the state backends (``backends/``) and what a
function's runtime context hands out. The public names (descriptors, ``StateTtlConfig``, the
state classes) are in ``barrierflow.datastream.state``, PyFlink's path.

The names this package offered before (``from barrierflow.state import ValueStateDescriptor``)
are deprecated: each warns and gives the public one. Pickled state names the defining modules
(``barrierflow.state.descriptors``...), never this face, so it unpickles without a warning."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        n: f"barrierflow.datastream.state.{n}"
        for n in (
            "AggregatingState",
            "AggregatingStateDescriptor",
            "BroadcastState",
            "ListState",
            "ListStateDescriptor",
            "MapState",
            "MapStateDescriptor",
            "ReadOnlyBroadcastState",
            "ReducingState",
            "ReducingStateDescriptor",
            "State",
            "StateDescriptor",
            "StateTtlConfig",
            "ValueState",
            "ValueStateDescriptor",
        )
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
