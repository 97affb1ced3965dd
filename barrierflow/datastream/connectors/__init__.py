"""PyFlink's ``pyflink.datastream.connectors``: what every connector shares (``DeliveryGuarantee``,
``Source``, ``Sink``); each connector's names are in its module, PyFlink's (``file_system``,
``kafka``, ``number_seq``, ``jdbc``) and barrierflow's own (``postgres``, ``delta``,
``iceberg``, ``spark_table``, ``discarding``); how to write a connector is in ``base``.

``FileSink`` and ``FileSource`` here are deprecated (PyFlink 2.3 has them in ``file_system``
only): they warn and give ``file_system``'s."""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import Sink
from barrierflow.connectors.interfaces.source import Source
from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        "FileSink": "barrierflow.datastream.connectors.file_system.FileSink",
        "FileSource": "barrierflow.datastream.connectors.file_system.FileSource",
    },
)

__all__ = ["DeliveryGuarantee", "Sink", "Source"]


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
