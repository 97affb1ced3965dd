"""PyFlink's ``pyflink.datastream.connectors.base``: what every connector is built on.

``Source`` and ``Sink`` are barrierflow's connector interfaces (docs/adr/0018-connector-
framework.md): PyFlink's wrap a Java object, so a Python source or sink subclasses these here.
"""

from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.stream_transformer import (
    StreamTransformer,
    SupportsPreprocessing,
)
from barrierflow.connectors.sink import Sink
from barrierflow.connectors.source import Source

__all__ = ["DeliveryGuarantee", "Sink", "Source", "StreamTransformer", "SupportsPreprocessing"]
