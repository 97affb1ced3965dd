"""PyFlink's ``pyflink.datastream.connectors``: the connectors' common names, at the same path
(each connector's own names are in its module: ``file_system``, ``kafka``)."""

from barrierflow.connectors.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.files import FileSink, FileSource

__all__ = ["DeliveryGuarantee", "FileSink", "FileSource"]
