"""Sources and sinks. Connectors with optional client libraries (``connectors.postgres``) are
imported from their own modules, so that importing this package needs none of them; Parquet
(pyarrow) is loaded when first named, so that executors of other jobs never load it."""

from typing import Any

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.file_sink import DiscardingSink, FileSink
from barrierflow.connectors.file_source import FileSource
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
        from barrierflow.connectors.parquet import ParquetWriterFactory

        return ParquetWriterFactory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
