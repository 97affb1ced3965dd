"""State descriptors: users declare state by name and kind; the runtime makes the state object.

A warning that applies to every kind: the heap backend keeps references to the objects you
store. Do not mutate a value after ``update()``/``add()``/``put()``: the change may or may not
reach the next checkpoint. Store immutable values, or update() again after a change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class StateKind(enum.Enum):
    VALUE = "value"
    LIST = "list"
    MAP = "map"


@dataclass(frozen=True)
class StateDescriptor:
    name: str
    type_info: Any = None  # accepted for PyFlink compatibility; values are pickled
    kind: StateKind = StateKind.VALUE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a state descriptor needs a non-empty name, got {self.name!r}")


class ValueStateDescriptor(StateDescriptor):
    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info, StateKind.VALUE)


class ListStateDescriptor(StateDescriptor):
    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info, StateKind.LIST)


class MapStateDescriptor(StateDescriptor):
    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, (key_type_info, value_type_info), StateKind.MAP)
