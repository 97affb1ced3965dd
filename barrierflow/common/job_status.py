"""PyFlink's ``pyflink.common.job_status``."""

from barrierflow.cluster.job_outcome import JobStatus

__all__ = ["JobStatus"]
