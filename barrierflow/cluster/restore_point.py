"""The snapshot an attempt restores: the job's latest readable checkpoint once it has one, else
what the job was started from (``-s``, or nothing).

Reading it waits for storage that is briefly unreachable (an object store restarting while the
job restarts), a bounded number of times; storage that stays down fails the job, naming it. A
job with checkpoints none of which reads back is refused a restart from scratch, which would
duplicate its committed output.

**I/O:** reads the checkpoint's ``_metadata`` (through the coordinator).
"""

from __future__ import annotations

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage_retry import StorageUnavailableError, with_storage_retries
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator
from barrierflow.coordination.leadership import refuse_a_later_epoch
from barrierflow.errors import JobExecutionError


def restore_point(
    plan: JobPlan, coordinator: CheckpointCoordinator, epoch: int
) -> tuple[CheckpointMetadata | None, str | None]:
    """(the snapshot, the URI its paths are relative to); ``epoch``: the JobMaster's leader
    epoch (a checkpoint of a later one is never restored)."""
    if coordinator.store.latest() is None:
        return plan.restore_from, plan.restore_root_uri
    uri = plan.task_config.storage_uri
    assert uri is not None  # a checkpoint was stored there
    try:
        metadata = with_storage_retries(
            coordinator.restorable.latest, "read the checkpoint to restore from", uri
        )
    except StorageUnavailableError as e:
        raise JobExecutionError(f"job {plan.job_id} cannot restart: {e}") from e
    if metadata is None:
        raise JobExecutionError(
            "no retained checkpoint of this job can be read back (see the errors above); "
            "refusing to restart from scratch, which would duplicate committed output. "
            "Raise num-retained to keep fallbacks"
        )
    refuse_a_later_epoch(metadata, epoch)
    return metadata, uri
