"""Internal: sources and sinks. Their public names are in ``barrierflow.datastream.connectors``
and its modules (docs/public-api.md).

The interfaces every connector and the runtime program against are in ``interfaces/`` (pure: no
I/O, no connector); what connectors share in ``base/`` (the split reader that keeps positions,
static splits, struct codecs); each system's connectors in a package of their own: ``files``,
``kafka``, ``postgres`` (and JDBC's mapping onto it), ``delta``, ``iceberg``, ``spark_table``,
``tables`` (what the table connectors share), ``builtin`` (sequences, collections, ``print()``'s
collect sink, the discarding sink); record formats in ``formats``.

The names this package offered before are deprecated: each warns, naming its public path, and
gives the object there. Importing the package loads no connector and no client library
(pyarrow, confluent-kafka, psycopg, deltalake, pyiceberg), so that executors of other jobs never
load them."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_DATASTREAM = "barrierflow.datastream.connectors"
_MOVED = MovedNames(
    __name__,
    {
        "DeliveryGuarantee": f"{_DATASTREAM}.DeliveryGuarantee",
        "DiscardingSink": f"{_DATASTREAM}.discarding.DiscardingSink",
        "FileSink": f"{_DATASTREAM}.file_system.FileSink",
        "FileSource": f"{_DATASTREAM}.file_system.FileSource",
        "ParquetWriterFactory": "barrierflow.datastream.formats.parquet.ParquetWriterFactory",
        "SequenceSource": f"{_DATASTREAM}.number_seq.NumberSequenceSource",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
