"""What a JobMaster does when its job ended, apart from the attempt loop: the result of a
finished job; the sinks of one that failed for good settled against its last checkpoint; the
retained checkpoints of a canceled one kept or deleted, as externalized retention says.

**Threading:** the JobMaster's. **I/O:** checkpoint storage (deletions on cancel), the sinks'
systems (settling).
"""

from __future__ import annotations

import logging
import time

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.attempt_supervisor import AttemptSupervisor
from barrierflow.cluster.job_outcome import JobExecutionResult
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.sink_job_end import settle_sinks
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator

log = logging.getLogger("barrierflow.jobmaster")


def job_result(
    plan: JobPlan,
    attempts: int,
    started: float,
    coordinator: CheckpointCoordinator,
    supervisor: AttemptSupervisor,
    storage: CheckpointDirectory | None,
) -> JobExecutionResult:
    """The result of a job that finished (``started``: monotonic seconds)."""
    attempt = supervisor.current
    ids = tuple(c.checkpoint_id for c in coordinator.store.all())
    final = None
    if ids and storage is not None:
        final = storage.absolute(layout.metadata_path(ids[-1]))
    return JobExecutionResult(
        job_id=plan.job_id,
        job_name=plan.job_name,
        attempts=attempts,
        net_runtime_ms=int((time.monotonic() - started) * 1000),
        final_checkpoint=final,
        checkpoint_ids=ids,
        num_completed_checkpoints=coordinator.num_completed,
        num_failed_checkpoints=coordinator.num_failed,
        checkpoint_history=tuple(coordinator.history.records),
        processing_ms=attempt.processing_ms() if attempt is not None else 0,
        restores=tuple(supervisor.restores),
        recoveries=supervisor.recovery_times.stats(coordinator.history.records),
    )


def settle_failed_job_sinks(plan: JobPlan, coordinator: CheckpointCoordinator) -> None:
    """The job failed for good: no attempt will come to clean up what its sinks left
    prepared, so they settle it now against the last checkpoint the job completed (or
    restored from, before any of its own)."""
    completed = [c.checkpoint_id for c in coordinator.store.all()]  # readable or not
    completed += [
        r.checkpoint_id
        for r in coordinator.history.records
        if r.status is CheckpointStatus.COMPLETED
    ]
    if plan.restore_from is not None:
        completed.append(plan.restore_from.checkpoint_id)
    last = max(completed, default=None)
    settle_sinks(plan.graph.job_graph, plan.job_id, plan.job_name, last)


def apply_retention_on_cancel(
    plan: JobPlan, coordinator: CheckpointCoordinator, storage: CheckpointDirectory | None
) -> None:
    """The job was canceled: its retained checkpoints stay (RETAIN_ON_CANCELLATION) or go."""
    if storage is None:
        return
    retained = coordinator.store.all()
    if plan.retain_on_cancel:
        for c in retained:
            log.info(
                "Retained checkpoint %s", storage.absolute(layout.checkpoint_dir(c.checkpoint_id))
            )
        return
    for c in retained:
        storage.discard_checkpoint_dir(c.checkpoint_id)
    storage.discard_shared_dir()
    log.info(
        "Deleted %d retained checkpoint(s) on cancel (externalized-checkpoint-retention "
        "is not RETAIN_ON_CANCELLATION)",
        len(retained),
    )
