"""Where a job's slots run: a ``JobExecutor`` makes the JobMaster that runs a checked plan on
its cluster (Flink's ``PipelineExecutor``). ``spark_executor.py``: on Spark (embedded
``local[N]`` or a cluster); ``barrierflow/testing/thread_deployer.py``: on threads of this
process, for tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from barrierflow.cluster.job_master import JobMaster
    from barrierflow.cluster.job_plan import JobPlan


class JobExecutor(Protocol):
    def job_master(self, plan: JobPlan) -> JobMaster:
        """The JobMaster that runs ``plan`` on this executor's cluster, not started yet (its
        ``run`` starts it). Called once per job, on the thread that submits it; may set the
        plan's addresses (``bind_host``, ``slot_bind_host``) for the cluster's network."""
        ...
