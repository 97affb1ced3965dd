"""User functions, PyFlink-style.

Plain callables work wherever a function is expected (``map(lambda x: ...)``); the classes
here add ``open``/``close`` and, for keyed processing, a runtime context to declare state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class RuntimeContext:
    """What an ``open()`` sees: the subtask and, for keyed functions, its state."""

    def __init__(self, task_name: str, subtask: int, parallelism: int, keyed_backend=None):
        self._task_name = task_name
        self._subtask = subtask
        self._parallelism = parallelism
        self._keyed_backend = keyed_backend

    def get_task_name(self) -> str:
        return self._task_name

    def get_index_of_this_subtask(self) -> int:
        return self._subtask

    def get_number_of_parallel_subtasks(self) -> int:
        return self._parallelism

    def _backend(self):
        if self._keyed_backend is None:
            raise RuntimeError(
                "keyed state is only available in functions applied to a KeyedStream "
                "(call key_by() before process())"
            )
        return self._keyed_backend

    def get_state(self, descriptor):
        return self._backend().get_state(descriptor)

    def get_list_state(self, descriptor):
        return self._backend().get_state(descriptor)

    def get_map_state(self, descriptor):
        return self._backend().get_state(descriptor)


class Function:
    def open(self, runtime_context: RuntimeContext) -> None:
        pass

    def close(self) -> None:
        pass


class MapFunction(Function):
    def map(self, value: Any) -> Any:
        raise NotImplementedError


class FlatMapFunction(Function):
    def flat_map(self, value: Any) -> Iterable[Any]:
        raise NotImplementedError


class FilterFunction(Function):
    def filter(self, value: Any) -> bool:
        raise NotImplementedError


class KeyedProcessFunction(Function):
    """Processes each record of a KeyedStream with access to the state of its key."""

    class Context:
        __slots__ = ("_key_context",)

        def __init__(self, key_context) -> None:
            self._key_context = key_context

        def get_current_key(self) -> Any:
            return self._key_context.key

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterable[Any]:
        raise NotImplementedError
