"""PyFlink's ``pyflink.datastream.time_domain``."""

from barrierflow.datastream.functions.one_input import TimeDomain

__all__ = ["TimeDomain"]
