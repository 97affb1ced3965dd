"""What the JobMaster runs: the job's graph and the configuration of its tasks, its
checkpoints, its restarts and its REST server, as the environment planned them. Performs no
I/O."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.cluster.job_status import CheckpointSettings
from barrierflow.cluster.rest.server import RestConfig
from barrierflow.cluster.restart_strategy import RestartStrategy
from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from barrierflow.coordination.leadership import NOT_HIGHLY_AVAILABLE, Leadership
from barrierflow.graph.execution_graph import ExecutionGraph
from barrierflow.runtime.task_descriptor import TaskConfig

NO_REST_SERVER = RestConfig(port=-1)


@dataclass
class JobPlan:
    job_id: str
    job_name: str
    graph: ExecutionGraph
    task_config: TaskConfig
    coordinator_config: CoordinatorConfig  # interval None: checkpointing off (savepoints only)
    restart_strategy: RestartStrategy
    restore_from: CheckpointMetadata | None = None
    restore_root_uri: str | None = None
    restore_path: str | None = None  # -s as given, kept in the job's directory for a resume
    claim_restored: bool = False  # execution.state-recovery.claim-mode CLAIM
    allow_non_restored_state: bool = False  # execution.state-recovery.ignore-unclaimed-state
    savepoint_dir: str | None = None  # execution.checkpointing.savepoint-dir
    retain_on_cancel: bool = False  # externalized-checkpoint-retention RETAIN_ON_CANCELLATION
    resume: bool = False  # take over the retained checkpoints of an earlier JobMaster of the job
    bind_host: str = "127.0.0.1"  # where the JobMaster listens
    slot_bind_host: str | None = "127.0.0.1"  # None: each slot's own host address
    heartbeat_timeout_s: float = 10.0
    rest: RestConfig = NO_REST_SERVER  # the REST API and web UI; none unless asked for
    # high availability: the lease this JobMaster leads the job by (client/ha/)
    leadership: Leadership = NOT_HIGHLY_AVAILABLE
    registry_dir: str | None = None  # job-registry.dir; None: the default (job_registry.py)
    max_identical_failures: int = 3  # restart-strategy.max-identical-failures (0: off)
    # the job's graph at another parallelism: (default parallelism or None, parallelism per
    # operator uid) -> its graph; None: the job cannot be rescaled (built without a program)
    regraph: Callable[[int | None, Mapping[str, int]], ExecutionGraph] | None = None
    first_checkpoint_id: int = 1  # ids below it were reserved by earlier leaders
    # scheduler-mode reactive: its stabilization time (resource-stabilization-timeout), in
    # seconds; None: the parallelism changes only when asked to
    reactive_stabilization_s: float | None = None
    autoscaler: AutoscalerSettings | None = None  # job.autoscaler.enabled: its settings

    def checkpoint_settings(self) -> CheckpointSettings:
        """How the job checkpoints, as the REST API's ``/checkpoints/config`` shows it."""
        cc, tc = self.coordinator_config, self.task_config
        return CheckpointSettings(
            enabled=cc.interval_s is not None,
            exactly_once=tc.exactly_once,
            interval_ms=round((cc.interval_s or 0) * 1000),
            timeout_ms=round(cc.timeout_s * 1000),
            min_pause_ms=round(cc.min_pause_s * 1000),
            max_concurrent=cc.max_concurrent,
            tolerable_failures=cc.tolerable_failures,
            num_retained=cc.num_retained,
            unaligned=tc.unaligned_checkpoints,
            aligned_timeout_ms=tc.aligned_checkpoint_timeout_ms,
            retain_on_cancel=self.retain_on_cancel,
            state_backend=tc.state_backend.kind,
            incremental=tc.state_backend.incremental,
            storage_uri=tc.storage_uri,
            savepoint_dir=self.savepoint_dir,
            checkpoints_after_tasks_finish=cc.checkpoints_after_tasks_finish,
        )
