"""PyFlink's ``pyflink.datastream.time_domain``."""

from barrierflow.functions import TimeDomain

__all__ = ["TimeDomain"]
