"""PyFlink's ``pyflink.common.job_id``."""

from barrierflow.cluster.job_outcome import JobID

__all__ = ["JobID"]
