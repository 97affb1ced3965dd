"""PyFlink's ``pyflink.datastream.connectors.number_seq``."""

from barrierflow.connectors.builtin.number_sequence_source import NumberSequenceSource

__all__ = ["NumberSequenceSource"]
