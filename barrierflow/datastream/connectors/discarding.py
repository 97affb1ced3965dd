"""barrierflow's ``DiscardingSink``: drops every record (Flink's ``DiscardingSink``, which
PyFlink does not wrap); for benchmarks, and jobs run for their side effects or state. Built in
``barrierflow/connectors/builtin/``; it loads when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "DiscardingSink": "barrierflow.connectors.builtin.discarding_sink",
    },
)

__all__ = [
    "DiscardingSink",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.builtin.discarding_sink import DiscardingSink
