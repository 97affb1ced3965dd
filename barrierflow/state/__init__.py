"""Public state declarations (``from barrierflow.state import ValueStateDescriptor``)."""

from barrierflow.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.state.state_ttl_config import StateTtlConfig

__all__ = [
    "AggregatingStateDescriptor",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "ReducingStateDescriptor",
    "StateDescriptor",
    "StateTtlConfig",
    "ValueStateDescriptor",
]
