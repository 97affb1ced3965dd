"""PyFlink's ``pyflink.common.typeinfo``."""

from barrierflow.typeinfo import TypeInformation, Types

__all__ = ["TypeInformation", "Types"]
