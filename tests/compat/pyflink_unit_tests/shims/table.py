"""The Table API names PyFlink's DataStream test modules import (``pyflink.table``): present,
so that the modules import; a test that uses one is excluded (barrierflow has no Table API),
and one that reaches it anyway fails naming it."""

from __future__ import annotations

from typing import Any


class TableApiUnavailable(RuntimeError):
    pass


class _Unavailable:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        raise TableApiUnavailable(f"pyflink.table.{self._name}: barrierflow has no Table API")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TableApiUnavailable(f"pyflink.table.{self._name}: barrierflow has no Table API")


def __getattr__(name: str) -> Any:
    return _Unavailable(name)
