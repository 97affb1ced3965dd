"""barrierflow's Apache Iceberg connector: ``IcebergSink``, exactly once by one append snapshot
per checkpoint, and ``IcebergSource``, a snapshot's files or the files new snapshots add
(docs/adr/0019-delta-and-iceberg.md), built in ``barrierflow/connectors/iceberg/``. Needs
pyiceberg (``pip install 'barrierflow[iceberg]'``): each name loads when first asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "IcebergSink": "barrierflow.connectors.iceberg.iceberg_sink",
        "IcebergSource": "barrierflow.connectors.iceberg.iceberg_source",
    },
)

__all__ = [
    "IcebergSink",
    "IcebergSource",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.iceberg.iceberg_sink import IcebergSink
    from barrierflow.connectors.iceberg.iceberg_source import IcebergSource
