"""Sources and sinks. The interfaces every connector and the runtime program against are in
``interfaces/`` (pure: no I/O, no connector); what connectors share in ``base/`` (the split
reader that keeps positions, static splits, struct codecs); each system's connectors in a
package of their own: ``files``, ``kafka``, ``postgres`` (and ``jdbc.py`` on it), ``delta``,
``iceberg``, ``spark_table``, ``tables`` (what the table connectors share), ``builtin``
(sequences, collections, ``print()``'s collect sink, the discarding sink); record formats in
``formats``. ``source.py``, ``split_enumerator.py``, ``source_reader.py`` and ``sink.py`` are the
interfaces' public paths.

This face loads each name when first asked for (module ``__getattr__``): importing it loads no
connector and no client library (pyarrow, confluent-kafka, psycopg, deltalake, pyiceberg), so
that executors of other jobs never load them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from barrierflow.connectors.base.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "DeliveryGuarantee": "barrierflow.connectors.interfaces.delivery_guarantee",
        "DiscardingSink": "barrierflow.connectors.builtin.discarding_sink",
        "FileSink": "barrierflow.connectors.files.file_sink",
        "FileSource": "barrierflow.connectors.files.file_source",
        "ParquetWriterFactory": "barrierflow.connectors.files.parquet",
        "SequenceSource": "barrierflow.connectors.builtin.sequence_source",
    },
)

__all__ = [
    "DeliveryGuarantee",
    "DiscardingSink",
    "FileSink",
    "FileSource",
    "ParquetWriterFactory",
    "SequenceSource",
]


def __getattr__(name: str) -> Any:
    return _NAMES.get(name, globals())


def __dir__() -> list[str]:
    return _NAMES.listing(globals())


if TYPE_CHECKING:
    from barrierflow.connectors.builtin.discarding_sink import DiscardingSink
    from barrierflow.connectors.builtin.sequence_source import SequenceSource
    from barrierflow.connectors.files.file_sink import FileSink
    from barrierflow.connectors.files.file_source import FileSource
    from barrierflow.connectors.files.parquet import ParquetWriterFactory
    from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
