"""Functions the API builds around a program's own: ``map``, ``flat_map`` and ``filter`` on a
KeyedStream for functions that declare keyed state in ``open`` (as PyFlink allows), which run
as keyed process functions so that their runtime context has the key's state (functions that
do not open run as plain operators, at their speed); and ``project``'s projection.

Unpickled on the executors: imports only the function interfaces.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from barrierflow.datastream.functions.one_input import Function, KeyedProcessFunction


def opens(fn: Any) -> bool:
    """Whether ``fn`` has an ``open`` of its own (where it may declare keyed state)."""
    method = getattr(type(fn), "open", None)
    return callable(method) and method is not Function.open


class _KeyedCall(KeyedProcessFunction):
    """Calls the user function's ``method`` on each record, with the key current."""

    yields_side_outputs = False
    method = ""

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def open(self, runtime_context: Any) -> None:
        self._fn.open(runtime_context)
        self._call = getattr(self._fn, self.method, self._fn)

    def close(self) -> None:
        if callable(getattr(self._fn, "close", None)):
            self._fn.close()


class KeyedMap(_KeyedCall):
    method = "map"

    def process_element(self, value: Any, ctx: Any) -> list[Any]:
        return [self._call(value)]


class KeyedFlatMap(_KeyedCall):
    method = "flat_map"

    def process_element(self, value: Any, ctx: Any) -> Iterable[Any] | None:
        return self._call(value)


class KeyedFilter(_KeyedCall):
    method = "filter"

    def process_element(self, value: Any, ctx: Any) -> tuple[Any, ...]:
        return (value,) if self._call(value) else ()


class Projection:
    """``project(*field_indexes)``: the tuple of those fields of a record."""

    def __init__(self, field_indexes: tuple[int, ...]) -> None:
        self.field_indexes = field_indexes

    def __call__(self, record: Any) -> tuple[Any, ...]:
        return tuple(record[i] for i in self.field_indexes)
