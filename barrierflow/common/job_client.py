"""PyFlink's ``pyflink.common.job_client``, and barrierflow's ``SavepointFormatType`` beside the
``JobClient`` whose savepoint methods take it (``format_type=``; Flink's Java enum, which
PyFlink does not wrap)."""

from barrierflow.api.job_client import JobClient, SavepointFormatType

__all__ = ["JobClient", "SavepointFormatType"]
