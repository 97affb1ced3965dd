"""PyFlink's ``pyflink.datastream.data_stream``: the streams a program builds."""

from barrierflow.api.collect_iterator import CloseableIterator
from barrierflow.api.connected_streams import (
    BroadcastConnectedStream,
    BroadcastStream,
    ConnectedStreams,
)
from barrierflow.api.datastream import DataStream, DataStreamSink, KeyedStream
from barrierflow.api.windowed_stream import WindowedStream

__all__ = [
    "BroadcastConnectedStream",
    "BroadcastStream",
    "CloseableIterator",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "KeyedStream",
    "WindowedStream",
]
