"""PyFlink's ``pyflink.common.job_id``."""

from barrierflow.api.job_client import JobID

__all__ = ["JobID"]
