"""PyFlink's ``pyflink.datastream.checkpoint_config``."""

from barrierflow.api.checkpoint_config import CheckpointConfig

__all__ = ["CheckpointConfig"]
