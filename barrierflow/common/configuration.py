"""PyFlink's ``pyflink.common.configuration``."""

from barrierflow.api.configuration import Configuration

__all__ = ["Configuration"]
