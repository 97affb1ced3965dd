"""Sources and sinks: the connector framework (``source.py``, ``sink.py``) and one package per
system (``files``, ``kafka``, ``postgres``). Connectors with optional client libraries
(``connectors.postgres``, ``connectors.kafka``) are imported from their own packages, so that
importing this one needs none of them; Parquet (pyarrow) is loaded when first named, so that
executors of other jobs never load it."""

from typing import Any

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.discarding_sink import DiscardingSink
from barrierflow.connectors.files import FileSink, FileSource
from barrierflow.connectors.sequence_source import SequenceSource

__all__ = [
    "DeliveryGuarantee",
    "DiscardingSink",
    "FileSink",
    "FileSource",
    "ParquetWriterFactory",
    "SequenceSource",
]


def __getattr__(name: str) -> Any:
    if name == "ParquetWriterFactory":
        from barrierflow.connectors.files.parquet import ParquetWriterFactory

        return ParquetWriterFactory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
