"""State descriptors: users declare state by name and kind; the runtime makes the state object.

A warning that applies to every kind: the heap backend keeps references to the objects you
store. Do not mutate a value after ``update()``/``add()``/``put()``: the change may or may not
reach the next checkpoint. Store immutable values, or update() again after a change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from barrierflow.common.typeinfo import checked_type
from barrierflow.state.state_ttl_config import StateTtlConfig


class StateKind(enum.Enum):
    VALUE = "value"
    LIST = "list"
    MAP = "map"


@dataclass(frozen=True)
class StateDescriptor:
    name: str
    # The declared type (a map state's: key and value): what is stored is checked against it
    # (typed_state.py) and RocksDB stores it by it (value_codec.py).
    type_info: Any = None
    kind: StateKind = StateKind.VALUE
    ttl: StateTtlConfig | None = field(default=None, compare=False)
    # Values of fields a restored row state lacks (schema_evolution.py): field path -> value.
    field_defaults: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a state descriptor needs a non-empty name, got {self.name!r}")
        declared = self.type_info if self.kind is StateKind.MAP else (self.type_info,)
        for type_info in declared:
            checked_type(type_info, f"state {self.name!r}")

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Values of this state expire ``ttl_config``'s time after their last write (or read)."""
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(
                "enable_time_to_live takes a StateTtlConfig (StateTtlConfig.new_builder(...)"
                f".build()), not {ttl_config!r}"
            )
        object.__setattr__(self, "ttl", ttl_config)

    def set_field_defaults(self, defaults: dict[str, Any]) -> StateDescriptor:
        """Values for the fields of a ``ROW_NAMED`` state that its restored values lack (a
        field added since the snapshot), by field name (``"address.zip"`` inside a nested
        row); a field without one gets None. Returns the descriptor."""
        if not isinstance(defaults, dict) or not all(isinstance(k, str) for k in defaults):
            raise TypeError(
                f"set_field_defaults takes a dict of field names to values, not {defaults!r:.100}"
            )
        object.__setattr__(self, "field_defaults", dict(defaults))
        return self


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info, StateKind.VALUE)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info, StateKind.LIST)


class MapStateDescriptor(StateDescriptor):
    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, (key_type_info, value_type_info), StateKind.MAP)


class ReducingStateDescriptor(StateDescriptor):
    """A value that ``add`` combines with ``reduce_function`` (a ReduceFunction or a function
    of two values); stored as value state."""

    reduce_function: Any

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info, StateKind.VALUE)
        reduce = getattr(reduce_function, "reduce", reduce_function)
        if not callable(reduce):
            raise TypeError(
                f"ReducingStateDescriptor {name!r} needs a ReduceFunction or a function of two "
                f"values, not {reduce_function!r}"
            )
        object.__setattr__(self, "reduce_function", reduce_function)

    def get_reduce_function(self) -> Any:
        return self.reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    """An accumulator that ``add`` feeds through ``agg_function`` (an AggregateFunction);
    ``get`` returns its result; stored as value state."""

    agg_function: Any

    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info, StateKind.VALUE)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise TypeError(
                    f"AggregatingStateDescriptor {name!r} needs an AggregateFunction; "
                    f"{agg_function!r} has no {method}()"
                )
        object.__setattr__(self, "agg_function", agg_function)

    def get_agg_function(self) -> Any:
        return self.agg_function
