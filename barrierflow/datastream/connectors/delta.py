"""barrierflow's Delta Lake connector: ``DeltaSink``, exactly once by one Delta transaction per
checkpoint, and ``DeltaSource``, a version's files or the files new versions add
(docs/adr/0019-delta-and-iceberg.md), built in ``barrierflow/connectors/delta/``. Needs delta-rs
(``pip install 'barrierflow[delta]'``): each name loads when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "DeltaSink": "barrierflow.connectors.delta.delta_sink",
        "DeltaSource": "barrierflow.connectors.delta.delta_source",
    },
)

__all__ = [
    "DeltaSink",
    "DeltaSource",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.delta.delta_sink import DeltaSink
    from barrierflow.connectors.delta.delta_source import DeltaSource
