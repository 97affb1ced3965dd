"""PyFlink's ``pyflink.datastream.output_tag``."""

from barrierflow.side_outputs import OutputTag

__all__ = ["OutputTag"]
