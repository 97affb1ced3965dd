"""PyFlink's ``pyflink.common.job_execution_result``."""

from barrierflow.cluster.job_outcome import JobExecutionResult

__all__ = ["JobExecutionResult"]
