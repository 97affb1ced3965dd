"""PyFlink's ``pyflink.datastream.state``: the state a keyed function declares (descriptors, a
time to live) and the state objects it gets, defined in ``barrierflow/state/``. ``State`` and
``StateDescriptor`` are their bases, as in PyFlink's module. Performs no I/O."""

from barrierflow.state.broadcast_state import BroadcastState, ReadOnlyBroadcastState
from barrierflow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.state.state_ttl_config import StateTtlConfig
from barrierflow.state.user_state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)

__all__ = [
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
]
