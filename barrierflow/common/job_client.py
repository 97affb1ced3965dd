"""PyFlink's ``pyflink.common.job_client``."""

from barrierflow.api.job_client import JobClient

__all__ = ["JobClient"]
