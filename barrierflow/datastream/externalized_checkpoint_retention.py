"""PyFlink's ``pyflink.datastream.externalized_checkpoint_retention``."""

from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention

__all__ = ["ExternalizedCheckpointRetention"]
