"""PyFlink's ``pyflink.common.types``."""

from barrierflow.row import Row, RowKind

__all__ = ["Row", "RowKind"]
