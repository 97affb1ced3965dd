"""PyFlink's ``pyflink.common.serializer``."""

from barrierflow.windowing.serializers import TypeSerializer

__all__ = ["TypeSerializer"]
