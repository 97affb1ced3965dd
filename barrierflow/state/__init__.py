"""Public state declarations (``from barrierflow.state import ValueStateDescriptor``)."""

from barrierflow.state.descriptors import (
    ListStateDescriptor,
    MapStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)

__all__ = ["ListStateDescriptor", "MapStateDescriptor", "StateDescriptor", "ValueStateDescriptor"]
