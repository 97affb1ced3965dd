"""Internal: files, FileSource (a file per split, read by a stream or bulk format: lines of text
here; CSV, Avro and Parquet in ``connectors/formats/``) and FileSink (exactly-once part files,
JSON Lines, lines of text, Parquet, or the bulk formats of ``connectors/formats/``, in buckets);
the public names are in ``barrierflow.datastream.connectors.file_system`` (and
``barrierflow.datastream.formats.parquet`` for ``ParquetWriterFactory``). The names this package
offered before are deprecated: each warns and gives the public one. Importing the package (or
its pure enumerator) loads no pyarrow."""

from __future__ import annotations

from typing import Any

from barrierflow.lazy_names import MovedNames

_MOVED = MovedNames(
    __name__,
    {
        **{
            n: f"barrierflow.datastream.connectors.file_system.{n}"
            for n in (
                "BucketAssigner",
                "BulkFormat",
                "FileSink",
                "FileSinkBuilder",
                "FileSource",
                "FileSourceBuilder",
                "OutputFileConfig",
                "OutputFileConfigBuilder",
                "RollingPolicy",
                "StreamFormat",
            )
        },
        "ParquetWriterFactory": "barrierflow.datastream.formats.parquet.ParquetWriterFactory",
    },
)

__all__ = _MOVED.names()


def __getattr__(name: str) -> Any:
    return _MOVED.get(name)
