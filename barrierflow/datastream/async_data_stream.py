"""PyFlink's ``pyflink.datastream.async_data_stream``."""

from barrierflow.api.async_data_stream import AsyncDataStream

__all__ = ["AsyncDataStream"]
