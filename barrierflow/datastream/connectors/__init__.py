"""PyFlink's ``pyflink.datastream.connectors``: the connectors' common names, at the same path
(each connector's own names are in its module: ``file_system``, ``kafka``, ``number_seq``)."""

from barrierflow.connectors.files import FileSink, FileSource
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.sink import Sink
from barrierflow.connectors.source import Source

__all__ = ["DeliveryGuarantee", "FileSink", "FileSource", "Sink", "Source"]
