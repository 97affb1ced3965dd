"""The JobMaster's scaling parts, built together: the rescaler, the rescales asked from outside
the JobMaster's loop, and reactive mode or the autoscaler when the job runs with one. Performs
no I/O of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.cluster.attempt_supervisor import AttemptListener
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.deployer import Deployer
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.operator_coordinator_host import OperatorCoordinatorHost
from barrierflow.cluster.scaling.autoscaler import Autoscaler
from barrierflow.cluster.scaling.reactive_mode import ReactiveMode
from barrierflow.cluster.scaling.reactive_scaler import ReactiveScaler
from barrierflow.cluster.scaling.rescale_operations import RescaleOperations
from barrierflow.cluster.scaling.rescaler import Rescaler
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator
from barrierflow.graph.execution_graph import ExecutionGraph


@dataclass
class JobScaling:
    rescaler: Rescaler
    operations: RescaleOperations
    reactive: ReactiveScaler | None
    autoscaler: Autoscaler | None

    @property
    def listeners(self) -> list[AttemptListener]:
        """What hears of the running attempt."""
        return [p for p in (self.rescaler, self.reactive, self.autoscaler) if p is not None]

    def before_attempt(
        self,
        restore: CheckpointMetadata | None,
        failed_at: float | None,
        wait: Callable[[float], None],
        canceled: Callable[[], bool],
    ) -> ExecutionGraph | None:
        """The graph the first attempt, or one after a failure at ``failed_at``, runs when
        reactive mode changes it; None: the job's."""
        if self.reactive is None:
            return None
        restore_id = restore.checkpoint_id if restore is not None else None
        return self.reactive.before_attempt(restore_id, failed_at, wait, canceled)


def job_scaling(
    plan: JobPlan,
    deployer: Deployer,
    coordinator: CheckpointCoordinator,
    channel: ControlChannel,
    status_view: JobStatusView,
    authorized: Callable[[str, str], bool],
    stop_attempt: Callable[[str], None],
    running: Callable[[], bool],
    operator_coordinators: OperatorCoordinatorHost,
) -> JobScaling:
    """``stop_attempt``: ends the running attempt for a rescale; ``running``: whether every
    task of the job runs now; ``authorized(job id, secret)``: whether a command-line request
    may act on the job."""
    reactive = plan.reactive_stabilization_s is not None
    rescaler = Rescaler(
        plan,
        deployer.available_slots,
        coordinator.checkpoint_now,
        stop_attempt,
        status_view.rescale_recorded,
        reactive=reactive,
    )
    operations = RescaleOperations(
        rescaler,
        channel,
        authorized,
        running,
        checkpointing=plan.coordinator_config.interval_s is not None,
    )
    scaler = autoscaler = None
    if plan.reactive_stabilization_s is not None:
        mode = ReactiveMode(plan.reactive_stabilization_s, plan.graph.job_graph.max_parallelism)
        scaler = ReactiveScaler(plan, mode, deployer.available_slots, rescaler)
    if plan.autoscaler is not None:
        autoscaler = Autoscaler(
            plan,
            plan.autoscaler,
            status_view,
            rescaler,
            deployer.available_slots,
            deployer.request_slots,
            operator_coordinators.enumerator_backlog,
        )
    return JobScaling(rescaler, operations, scaler, autoscaler)
