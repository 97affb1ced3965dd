"""PyFlink's ``pyflink.datastream.formats.orc``."""

from barrierflow.connectors.formats.orc_file import OrcBulkWriters

__all__ = ["OrcBulkWriters"]
