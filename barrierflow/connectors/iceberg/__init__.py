"""Apache Iceberg: ``IcebergSink``, exactly once by one append snapshot per checkpoint. Needs
pyiceberg: ``pip install 'barrierflow[iceberg]'``."""

from barrierflow.connectors.iceberg.iceberg_sink import IcebergSink

__all__ = ["IcebergSink"]
