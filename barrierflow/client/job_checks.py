"""What is checked of a planned job on the driver before Spark starts: that the state it
restores fits it, and that its connectors' settings work (a server reachable, a setting on
it). A bad setting fails now, not in a restart loop.

**I/O:** the connectors' checks reach their systems; a job taken over reads its latest
checkpoint's metadata; the dry run opens the keyed functions to compare the states they
declare.
"""

from __future__ import annotations

from typing import Any

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.checkpoint.storage_layout import metadata_path
from barrierflow.client.pipeline import Pipeline
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.connectors.interfaces.job_settings import JobSettings
from barrierflow.coordination.state_mapping import StateMapping, map_state
from barrierflow.errors import ConfigurationError, CorruptCheckpointError
from barrierflow.graph.transformation import TransformationKind
from barrierflow.state.declared_states import declared_states_of


def check_restore(plan: JobPlan, restore_path: str | None, dry_run: bool) -> StateMapping | None:
    """What the restore does per operator; a ConfigurationError when the restored state does
    not fit the job, unless this is a dry run, which reports it instead."""
    if plan.restore_from is None:
        return None
    job_graph = plan.graph.job_graph
    declared = declared_states_of(job_graph) if dry_run else None
    mapping = map_state(plan.restore_from, job_graph, declared)
    problems = mapping.problems(plan.allow_non_restored_state)
    if problems and not dry_run:
        raise ConfigurationError(f"cannot restore from {restore_path}: " + "; ".join(problems))
    return mapping


def check_resumed_state(plan: JobPlan) -> None:
    """A job taken over (``run --resume``, or a new driver under high availability) restores
    its latest retained checkpoint: a ConfigurationError, as ``run -s`` gives, when this
    program's operators do not fit it (another program under the same job id or cluster id)."""
    uri = plan.task_config.storage_uri
    if uri is None:
        return
    storage = CheckpointDirectory(uri)
    for checkpoint_id in reversed(storage.list_completed()):
        try:
            latest = storage.read_metadata(checkpoint_id)
        except CorruptCheckpointError:
            continue  # the JobMaster passes it over too, and says so
        problems = map_state(latest, plan.graph.job_graph).problems(plan.allow_non_restored_state)
        if problems:
            path = storage.absolute(metadata_path(checkpoint_id))
            raise ConfigurationError(
                f"cannot restore from {path}, the latest checkpoint of job {plan.job_id}: "
                + "; ".join(problems)
            )
        return


def check_connectors(pipeline: Pipeline) -> None:
    """Every source and sink of the job checks its configuration (``check``)."""
    from barrierflow.cluster.spark.session_catalog import SessionCatalog

    cc = pipeline.checkpointing
    job = JobSettings(
        checkpointing=cc.enabled,
        exactly_once=cc.exactly_once,
        interval_ms=cc.interval_ms,
        timeout_ms=cc.timeout_ms,
        max_concurrent=cc.max_concurrent,
        table_catalog=SessionCatalog(lambda: _given_or_active_spark(pipeline)),
    )
    for t in pipeline.reach():
        if t.kind in (TransformationKind.SOURCE, TransformationKind.SINK):
            t.function.check(job)


def _given_or_active_spark(pipeline: Pipeline) -> Any:
    """The session the job will run on, if there is one yet (SparkTableSink's catalog)."""
    if pipeline.spark is not None:
        return pipeline.spark
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()
