"""PyFlink's ``pyflink.datastream.checkpointing_mode``."""

from barrierflow.api.checkpoint_config import CheckpointingMode

__all__ = ["CheckpointingMode"]
