"""The submitter: how an environment's jobs reach a cluster. It takes a pipeline, applies the
submission context's options, plans and checks the job, and hands it to an executor, which
makes its JobMaster.

**I/O:** planning's (storage checks, the snapshot to restore), the connectors' checks, and the
executor's (Spark).
**Lifecycle:** one per environment, made with it, in the submission context installed then.
"""

from __future__ import annotations

from barrierflow.client.dry_run import DryRunFinished, dry_run_report
from barrierflow.client.executor import JobExecutor
from barrierflow.client.job_checks import check_connectors, check_restore
from barrierflow.client.pipeline import Pipeline
from barrierflow.client.planning import plan_job
from barrierflow.client.spark_executor import SparkExecutor
from barrierflow.client.submission_context import SubmissionContext, current_submission_context
from barrierflow.cluster.job_master import JobMaster


class JobSubmitter:
    def __init__(self, context: SubmissionContext) -> None:
        self.context = context

    @classmethod
    def in_current_context(cls) -> JobSubmitter:
        return cls(current_submission_context())

    def submit(self, pipeline: Pipeline) -> JobMaster:
        """The JobMaster of ``pipeline``'s job, ready to run. Its steps, in order:

        1. the context's options over the program's;
        2. the plan (``plan_job``: graphs, storage, the snapshot to restore);
        3. the restored state checked against the job; a dry run ends here
           (``DryRunFinished``, with its report);
        4. the connectors' checks;
        5. the executor's JobMaster, shown to the context's hook.
        """
        pipeline = self.context.over(pipeline)
        plan = plan_job(pipeline)
        mapping = check_restore(plan, pipeline.restore_path, self.context.dry_run)
        if self.context.dry_run:
            raise DryRunFinished(*dry_run_report(plan, mapping, pipeline.restore_path))
        check_connectors(pipeline)
        job_master = self._executor(pipeline).job_master(plan)
        if self.context.on_job_master is not None:
            self.context.on_job_master(job_master)
        return job_master

    def _executor(self, pipeline: Pipeline) -> JobExecutor:
        if self.context.executor is not None:
            return self.context.executor
        return SparkExecutor(
            pipeline.spark,
            self.context.spark_master,
            self.context.spark_conf,
            self.context.verbose,
        )
