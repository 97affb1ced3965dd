"""Apache Iceberg: ``IcebergSink``, exactly once by one append snapshot per checkpoint, and
``IcebergSource``, a snapshot's files or the files new snapshots add. Needs pyiceberg:
``pip install 'barrierflow[iceberg]'``."""

from barrierflow.connectors.iceberg.iceberg_sink import IcebergSink
from barrierflow.connectors.iceberg.iceberg_source import IcebergSource

__all__ = ["IcebergSink", "IcebergSource"]
