"""Delta Lake: ``DeltaSink``, exactly once by one Delta transaction per checkpoint, and
``DeltaSource``, a version's files or the files new versions add. Needs delta-rs:
``pip install 'barrierflow[delta]'``."""

from barrierflow.connectors.delta.delta_sink import DeltaSink
from barrierflow.connectors.delta.delta_source import DeltaSource

__all__ = ["DeltaSink", "DeltaSource"]
