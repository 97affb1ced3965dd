"""The submitter: how an environment's jobs reach a cluster. It takes a pipeline, applies the
submission context's options, plans and checks the job, and hands it to an executor, which
makes its JobMaster.

**I/O:** planning's (storage checks, the snapshot to restore), the connectors' checks, and the
executor's (Spark).
**Lifecycle:** one per environment, made with it, in the submission context installed then.
"""

from __future__ import annotations

import dataclasses

from barrierflow.client.dry_run import DryRunFinished, PlanRequested, dry_run_report
from barrierflow.client.executor import JobExecutor
from barrierflow.client.ha.job_leadership import JobLeadership, ha_settings, lead
from barrierflow.client.job_checks import check_connectors, check_restore, check_resumed_state
from barrierflow.client.pipeline import Pipeline
from barrierflow.client.planning import plan_job
from barrierflow.client.python_dependency_checks import checked_dependencies, resolve_requirements
from barrierflow.client.spark_executor import SparkExecutor
from barrierflow.client.submission_context import SubmissionContext, current_submission_context
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.python_dependencies import PythonDependencies, python_dependencies
from barrierflow.graph.job_graph import build_job_graph


class JobSubmitter:
    def __init__(self, context: SubmissionContext) -> None:
        self.context = context

    @classmethod
    def in_current_context(cls) -> JobSubmitter:
        return cls(current_submission_context())

    def submit(self, pipeline: Pipeline) -> JobMaster:
        """The JobMaster of ``pipeline``'s job, ready to run. Its steps, in order:

        1. the context's options over the program's;
        2. with high availability, leadership of the cluster id (``client/ha/``): as a
           standby, this waits; then the job is the cluster id's job, taken over;
        3. the plan (``plan_job``: graphs, storage, the snapshot to restore);
        4. the restored state checked against the job (and, for a job taken over, its latest
           checkpoint); a dry run ends here (``DryRunFinished``, with its report);
        5. the connectors' checks, and the job's Python dependencies: every file named exists,
           the requirements resolve (pip on the driver);
        6. the executor's JobMaster (on Spark, with the dependencies shipped), shown to the
           context's hook.
        """
        pipeline = self.context.over(pipeline)
        if self.context.plan_only:
            raise PlanRequested(pipeline)
        settings = ha_settings(pipeline.configuration, pipeline.job_name)
        if settings is None or self.context.dry_run:
            return self._submitted(pipeline, None)
        pipeline, leadership = lead(
            pipeline, settings, while_standby=lambda: self._prepare_standby(pipeline)
        )
        try:
            return self._submitted(pipeline, leadership)
        except BaseException:
            leadership.abandon()
            raise

    def _submitted(self, pipeline: Pipeline, leadership: JobLeadership | None) -> JobMaster:
        plan = plan_job(pipeline)
        if leadership is not None:
            plan = dataclasses.replace(
                plan, leadership=leadership, first_checkpoint_id=leadership.first_checkpoint_id
            )
        mapping = check_restore(plan, pipeline.restore_path, self.context.dry_run)
        if self.context.dry_run:
            raise DryRunFinished(*dry_run_report(plan, mapping, pipeline.restore_path))
        if plan.resume:
            check_resumed_state(plan)
        check_connectors(pipeline)
        deps = checked_dependencies(python_dependencies(pipeline.configuration.get))
        resolve_requirements(deps)
        job_master = self._executor(pipeline, deps).job_master(plan)
        if self.context.on_job_master is not None:
            self.context.on_job_master(job_master)
        return job_master

    def _prepare_standby(self, pipeline: Pipeline) -> None:
        """What an executor can get ready while the program waits as a standby (Spark: the
        SparkContext of a local master), for the slots the job will ask for."""
        deps = python_dependencies(pipeline.configuration.get)
        prepare = getattr(self._executor(pipeline, deps), "prepare_while_standby", None)
        if prepare is not None:
            prepare(build_job_graph(pipeline.stream_graph()).num_slots)

    def _executor(self, pipeline: Pipeline, deps: PythonDependencies) -> JobExecutor:
        if self.context.executor is not None:
            return self.context.executor
        return SparkExecutor(
            pipeline.spark,
            self.context.spark_master,
            self.context.spark_conf,
            self.context.verbose,
            deps,
        )
