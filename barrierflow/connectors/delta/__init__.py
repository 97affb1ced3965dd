"""Delta Lake: ``DeltaSink``, exactly once by one Delta transaction per checkpoint. Needs
delta-rs: ``pip install 'barrierflow[delta]'``."""

from barrierflow.connectors.delta.delta_sink import DeltaSink

__all__ = ["DeltaSink"]
