"""``KeyedStream.reduce`` and the field aggregations ``sum``, ``min``, ``max``, ``min_by`` and
``max_by``: running reductions per key, one output per record, as PyFlink emits them. They are
keyed process functions over a value state, so they checkpoint and rescale like any keyed state.

A field is a position (tuples, lists, Rows) or a name (Rows, dicts, objects); a record that is
a plain number is its own field 0. ``sum``/``min``/``max`` keep the other fields of the first
record of the key; ``min_by``/``max_by`` keep the whole record holding the extreme (the first
one on ties).
"""

from __future__ import annotations

import copy
from typing import Any

from barrierflow.common.types import Row
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.state.descriptors import ValueStateDescriptor

_STATE = ValueStateDescriptor("__reduced__")


class _Rolling(KeyedProcessFunction):
    yields_side_outputs = False

    def for_batch(self) -> KeyedProcessFunction:
        """This reduction in BATCH mode: only each key's final result."""
        return FinalResult(self)


class FinalResult(KeyedProcessFunction):
    """A running reduction that emits each key's result once, at the end of input (an
    event-time timer at the end of time), as Flink's batch execution does."""

    yields_side_outputs = False

    def __init__(self, rolling: _Rolling) -> None:
        self._rolling = rolling

    def open(self, runtime_context: Any) -> None:
        self._rolling.open(runtime_context)
        self._state = runtime_context.get_state(_STATE)

    def close(self) -> None:
        self._rolling.close()

    def process_element(self, value: Any, ctx: Any) -> None:
        self._rolling.process_element(value, ctx)
        ctx.timer_service().register_event_time_timer(MAX_WATERMARK)

    def on_timer(self, timestamp: int, ctx: Any) -> list[Any]:
        return [self._state.value()]


class RollingReduce(_Rolling):
    def __init__(self, reduce: Any) -> None:
        self._fn = reduce

    def open(self, runtime_context: Any) -> None:
        if hasattr(self._fn, "open"):
            self._fn.open(runtime_context)
        self._reduce = getattr(self._fn, "reduce", self._fn)
        self._state = runtime_context.get_state(_STATE)

    def close(self) -> None:
        if hasattr(self._fn, "close"):
            self._fn.close()

    def process_element(self, value: Any, ctx: Any) -> list[Any]:
        current = self._state.value()
        reduced = value if current is None else self._reduce(current, value)
        self._state.update(reduced)
        return [reduced]


def _get(record: Any, field: int | str) -> Any:
    if isinstance(record, int | float) and field == 0:
        return record
    if isinstance(record, Row):
        return record[field]
    if isinstance(field, str):
        if isinstance(record, dict):
            return record[field]
        return getattr(record, field)
    return record[field]


def _with(record: Any, field: int | str, value: Any) -> Any:
    """``record`` with ``field`` replaced, as a new record of the same kind."""
    if isinstance(record, int | float) and field == 0:
        return value
    if isinstance(record, dict):
        return {**record, field: value}
    if isinstance(record, tuple) and not hasattr(record, "_fields") and isinstance(field, int):
        return (*record[:field], value, *record[field + 1 :])
    if isinstance(record, list) and isinstance(field, int):
        return [*record[:field], value, *record[field + 1 :]]
    if isinstance(record, Row):  # by position or by name (ROW_NAMED); names and kind kept
        copied = copy.copy(record)
        copied[field] = value
        return copied
    replace = getattr(record, "_replace", None)  # namedtuple
    if replace is not None and isinstance(field, str):
        return replace(**{field: value})
    copied = type(record).__new__(type(record))  # a Row or another object: a copy
    copied.__dict__.update(getattr(record, "__dict__", {}))
    if isinstance(field, int):
        raise TypeError(f"cannot set field {field} of a {type(record).__name__}")
    setattr(copied, field, value)
    return copied


class FieldAggregation(_Rolling):
    def __init__(self, kind: str, field: int | str) -> None:
        if isinstance(field, bool) or not isinstance(field, int | str):
            raise TypeError(f"{kind}() takes a field position or name, not {field!r}")
        self.kind = kind
        self.field = field

    def open(self, runtime_context: Any) -> None:
        self._state = runtime_context.get_state(_STATE)

    def process_element(self, value: Any, ctx: Any) -> list[Any]:
        current = self._state.value()
        if current is None:
            result = value
        else:
            field, kind = self.field, self.kind
            old, new = _get(current, field), _get(value, field)
            if kind == "sum":
                result = _with(current, field, old + new)
            elif kind == "min":
                result = _with(current, field, new) if new < old else current
            elif kind == "max":
                result = _with(current, field, new) if new > old else current
            elif kind == "min_by":
                result = value if new < old else current
            else:
                result = value if new > old else current
        self._state.update(result)
        return [result]
