"""JobMaster: runs one job on Spark, attempt after attempt, and coordinates its checkpoints.

Its parts, each in a module of its own: ``AttemptSupervisor`` (start, supervise, stop an
attempt; fencing), ``SavepointOperations`` (savepoints and stop-with-savepoint), ``JobEndpoints``
(REST API, web UI, metrics, the published address and secret), ``OperatorCoordinatorHost`` (the
operators' coordinators), ``ControlChannel`` (messages to and from slots, tasks and the command
line), and the ``CheckpointCoordinator``. The JobMaster wires them and runs the job:

  1. before each attempt, wait for the coordinator's storage work (a sweep must not run beside
     new tasks) and pick the checkpoint to restore (the latest retained one, else the snapshot
     given with ``-s``);
  2. start the attempt and supervise it until it finished, failed, or the job was canceled;
  3. on a failure, ask the restart strategy (before stopping: the slots remove their local
     state when the job ends), stop the attempt, record the exception, then give up with the
     last attempt's error, or wait and go to 1;
  4. when the job failed for good (or refused to restart), have its sinks settle what they left
     prepared (``sink_job_end``): no attempt will come to do it.

Under high availability (``plan.leadership``, ``client/ha/``) the JobMaster acts only while it
leads: every storage write and deletion is fenced, and so is the notification that lets sinks
commit. When its leadership ends (a newer epoch took over, or its lease ran out while it was
paused or cut off), it stops its attempt's Spark stage and raises ``LeadershipLostError``,
doing nothing of what a job's end does (no settling of sinks, no deletion, no history): the new
leader goes on with the job.

The REST API, web UI and metrics (``cluster/rest``) read the job through ``status_view``, which
this JobMaster and its checkpoint coordinator feed (docs/adr/0010-rest-api-and-metrics.md).

**Threading:** ``run`` on the caller's thread, which is then the JobMaster's; ``cancel``,
``trigger_savepoint`` and ``is_secret`` from any thread. **I/O:** a zmq ROUTER on the driver;
the REST server's HTTP socket; checkpoint storage through the coordinator (on a storage I/O
thread) and the address file.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future

from barrierflow.checkpoint.storage import CheckpointDirectory, FileSystemSavepointStorage
from barrierflow.cluster.attempt import Attempt
from barrierflow.cluster.attempt_supervisor import AttemptSupervisor
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.corrupt_restore import judge_corrupt_restore
from barrierflow.cluster.deployer import Deployer
from barrierflow.cluster.exception_history import write_exceptions
from barrierflow.cluster.identical_failures import IdenticalFailures
from barrierflow.cluster.job_end import (
    apply_retention_on_cancel,
    job_result,
    settle_failed_job_sinks,
)
from barrierflow.cluster.job_endpoints import JobEndpoints, refuse_if_still_running
from barrierflow.cluster.job_master_network import JobMasterNetwork, ZmqJobMasterNetwork
from barrierflow.cluster.job_outcome import JobExecutionResult, JobStatus
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.operator_coordinator_host import OperatorCoordinatorHost
from barrierflow.cluster.restore_point import restore_point
from barrierflow.cluster.savepoint_operations import SavepointOperations
from barrierflow.cluster.scaling.job_scaling import job_scaling
from barrierflow.cluster.scaling.rescaler import RescaleRecord
from barrierflow.cluster.storage_io_thread import StorageIoThread
from barrierflow.coordination.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointFailuresExceeded,
)
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.coordination.leadership import FencedStorageIo, JobEnd
from barrierflow.coordination.operator_coordinator_checkpoints import OperatorCoordinatorFailed
from barrierflow.coordination.storage_housekeeping import ClaimedSnapshot
from barrierflow.errors import JobCanceledError, JobExecutionError, LeadershipLostError
from barrierflow.graph.execution_graph import ExecutionGraph
from barrierflow.protocol.checkpoint_barrier import SnapshotFormat
from barrierflow.state.backends import local_job_dir

log = logging.getLogger("barrierflow.jobmaster")


class JobMaster:
    def __init__(
        self, plan: JobPlan, deployer: Deployer, network: JobMasterNetwork | None = None
    ) -> None:
        """``network``: by default a ROUTER on ``plan.bind_host``."""
        self.plan = plan
        # What the REST API, the metrics and status lines read, from any thread.
        self.status_view = JobStatusView(
            plan.job_id, plan.graph.job_graph, plan.checkpoint_settings()
        )
        self.status = JobStatus.CREATED
        self._channel = ControlChannel(network or ZmqJobMasterNetwork(plan.bind_host))
        self.endpoint = self._channel.endpoint
        self._canceled = False
        # The job's checkpoint directory; without one, the history lives in memory.
        uri = plan.task_config.storage_uri
        self._storage = CheckpointDirectory(uri) if uri else None
        claimed = None
        if plan.claim_restored and plan.restore_from is not None:
            assert plan.restore_root_uri is not None  # planned with restore_from
            claimed = ClaimedSnapshot(plan.restore_root_uri, plan.restore_from)
        self._operator_coordinators = OperatorCoordinatorHost(
            plan.graph.job_graph, self._channel, self._fail_attempt
        )
        # Storage work of the coordinator runs off this thread, which keeps the heartbeats;
        # each piece only while this JobMaster leads (always, without high availability).
        self._leadership = plan.leadership
        self._lost: LeadershipLostError | None = None
        self._identical = IdenticalFailures(plan.max_identical_failures)
        if self._leadership.cluster_id is not None:
            self.status_view.leader_elected(
                self._leadership.cluster_id,
                self._leadership.epoch,
                self._leadership.leading_since_ms,
            )
        self._storage_io = StorageIoThread(self._post_storage_done)
        self._fenced_io = FencedStorageIo(self._storage_io, self._leadership)
        first_id = plan.restore_from.checkpoint_id + 1 if plan.restore_from else 1
        self._coordinator = CheckpointCoordinator(
            plan.job_id,
            plan.graph.job_graph,
            self._storage or InMemoryCheckpointStorage(),
            plan.coordinator_config,
            self._channel,
            FileSystemSavepointStorage(),
            first_checkpoint_id=max(first_id, plan.first_checkpoint_id),
            claimed=claimed,
            stats_listener=self.status_view,
            storage_io=self._fenced_io,
            operator_coordinators=self._operator_coordinators,
            leadership=self._leadership,
        )
        self._endpoints = JobEndpoints(plan, self._storage, self._channel, self._on_cancel)
        self._scaling = job_scaling(
            plan,
            deployer,
            self._coordinator,
            self._channel,
            self.status_view,
            self._endpoints.authorized,
            stop_attempt=lambda why: self._supervisor.stop_for_rescale(why),
            running=lambda: (
                self.status is JobStatus.RUNNING
                and bool(self._supervisor.current and self._supervisor.current.all_running)
            ),
            operator_coordinators=self._operator_coordinators,
        )
        self._rescaler = self._scaling.rescaler
        self._supervisor = AttemptSupervisor(
            plan,
            deployer,
            self._channel,
            self._coordinator,
            self.status_view,
            self._operator_coordinators,
            canceled=lambda: self._canceled,
            listeners=self._scaling.listeners,
        )
        self._savepoints = SavepointOperations(
            plan,
            self._coordinator,
            self._channel,
            self._endpoints.authorized,
            canceled=lambda: self._canceled,
            due_now=self._supervisor.checkpoint_due_now,
        )
        if plan.resume:
            try:
                self._take_over()
            except BaseException:
                self._close()
                raise
            self.status_view.history_loaded(self._coordinator.history.records)

    @property
    def status(self) -> JobStatus:
        return self._status

    @status.setter
    def status(self, status: JobStatus) -> None:
        self._status = status
        self.status_view.job_status_changed(status.name)

    @property
    def rest_url(self) -> str | None:
        return self._endpoints.rest_url

    def _take_over(self) -> None:
        """Becomes the JobMaster of a job whose previous one died: refuses while that one
        still answers (without high availability: with it, the lease says who leads), and when
        the job left no checkpoint to resume from (with high availability, it starts afresh)."""
        if not self._leadership.epoch:
            assert self._storage is not None  # no high availability: --resume, with checkpoints
            refuse_if_still_running(self._storage, self.plan.job_id)
        if not self._coordinator.take_over():
            if self._leadership.epoch and self.plan.restore_from is None:
                log.info(
                    "Job %s has no checkpoint yet: it starts from the beginning",
                    self.plan.job_id,
                )
                return
            if self.plan.restore_from is not None:
                # killed before its first checkpoint: what it started from is still the way back
                log.warning(
                    "Job %s has no checkpoint of its own yet; it restores again the snapshot it "
                    "was started from, %s",
                    self.plan.job_id,
                    self.plan.restore_path,
                )
                return
            raise JobExecutionError(
                f"job {self.plan.job_id} has no readable checkpoint under "
                f"{self.plan.task_config.storage_uri}; nothing to resume (check the job id and the "
                "checkpoint directory)"
            )

    # --- public -------------------------------------------------------------------------------

    def cancel(self) -> None:
        self._channel.mailbox.put(self._on_cancel)

    def is_secret(self, secret: str) -> bool:
        """From any thread: whether ``secret`` is this job's (the REST API's guard)."""
        return self._endpoints.is_secret(secret)

    def trigger_savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        stop: bool = False,
        drain: bool = False,
    ) -> Future[str]:
        """From any thread: see ``SavepointOperations.trigger``."""
        return self._savepoints.trigger(target_dir, snapshot_format, stop, drain)

    def rescale(
        self,
        parallelism: int | None,
        per_operator: Mapping[str, int] | None = None,
        reason: str = "asked for",
        trigger: str = "manual",
        per_vertex: Mapping[str, int] | None = None,
    ) -> Future[RescaleRecord]:
        """From any thread: see ``RescaleOperations.rescale``."""
        return self._scaling.operations.rescale(
            parallelism, per_operator, reason, trigger, per_vertex
        )

    def run(self) -> JobExecutionResult:
        started = time.monotonic()
        number = 0
        failed_at: float | None = None  # when the last attempt failed, if it did
        end: tuple[JobEnd, str | None] | None = None
        try:
            self._leadership.start(self._leadership_lost)
            self._endpoints.open(self.status_view, self)
            self._create_operator_coordinators()
            while True:
                self._raise_if_canceled()  # during the delay before a restart: no new attempt
                number += 1
                self._settle_storage(f"Attempt {number}")
                restore, restore_uri = restore_point(
                    self.plan, self._coordinator, self._leadership.epoch
                )
                if number == 1 or failed_at is not None:  # reactive mode: the slots there are
                    self._run_graph(
                        self._scaling.before_attempt(
                            restore, failed_at, self._supervisor.wait, lambda: self._canceled
                        )
                    )
                    self._raise_if_canceled()
                attempt = self._supervisor.start(number, restore, restore_uri)
                self.status = JobStatus.RUNNING
                self._rescaler.attempt_started(number)
                self._supervisor.supervise(attempt)
                if self._rescaler.stopping() and not self._canceled:
                    self._supervisor.stop(attempt, job_ended=False)
                    self._coordinator.attempt_ended(f"attempt {number} stopped to rescale")
                    self._run_graph(self._rescaler.next_graph())
                    failed_at = None
                    continue
                if attempt.failure is None and not self._canceled:
                    self._coordinator.attempt_ended("the job finished")
                    self.status = JobStatus.FINISHED
                    end = (JobEnd.FINISHED, None)
                    return job_result(
                        self.plan,
                        number,
                        started,
                        self._coordinator,
                        self._supervisor,
                        self._storage,
                    )
                failed_at = time.time()
                self._supervisor.recovery_times.attempt_failed(failed_at)
                delay = self._end_attempt(attempt)
                assert attempt.failure is not None  # _end_attempt returns for a failure only
                self.status = JobStatus.RESTARTING
                log.warning(
                    "Attempt %d failed: %s. Restarting in %.1f s (restart %d)",
                    number,
                    attempt.failure.error.splitlines()[0],
                    delay,
                    number,
                )
                self._supervisor.wait(delay)
        except LeadershipLostError as e:
            self._suspend(e)
            raise
        except JobCanceledError:
            end = (JobEnd.CANCELED, None)
            raise
        except JobExecutionError as e:
            self.status = JobStatus.FAILED
            if number > 0:  # before its first attempt, the job prepared nothing
                settle_failed_job_sinks(self.plan, self._coordinator)
            end = (JobEnd.FAILED, str(e).split("\n\nTask traceback:")[0])
            raise
        finally:
            self._rescaler.job_ended(f"the job ended ({self.status.name})")
            self._endpoints.job_ended(self.status.name, None if end is None else end[1])
            self._endpoints.close_rest()
            self._coordinator.shutdown(f"job {self.plan.job_id} ended ({self.status.name})")
            self._operator_coordinators.close()
            if self._lost is None:
                self._settle_storage("The job's end")
                self._endpoints.withdraw_address()
                if end is not None:
                    self._leadership.job_ended(*end)
            if self.plan.slot_bind_host == "127.0.0.1":  # local master: the slots' disk is ours
                local = local_job_dir(self.plan.task_config.state_backend, self.plan.job_id)
                shutil.rmtree(local, ignore_errors=True)
            self._close()

    def _run_graph(self, graph: ExecutionGraph | None) -> None:
        """The next attempt runs ``graph`` (a rescale, or its fallback)."""
        if graph is None:
            return
        self.plan.graph = graph
        for part in (self.status_view, self._operator_coordinators, self._coordinator):
            part.graph_changed(graph.job_graph)

    def _leadership_lost(self, error: LeadershipLostError) -> None:
        """From the lease's thread: the JobMaster's thread raises ``error`` at its next mail."""

        def lost() -> None:
            raise error

        self._channel.mailbox.put(lost)

    def _suspend(self, error: LeadershipLostError) -> None:
        """Leadership ended: the attempt's Spark stage stops, and nothing of a job's end is
        done; another JobMaster leads the job now (Flink's SUSPENDED)."""
        self._lost = error
        self.status = JobStatus.SUSPENDED
        log.error("Job %s (%s): %s", self.plan.job_name, self.plan.job_id, error)
        attempt = self._supervisor.current
        if attempt is not None:
            self._supervisor.stop(attempt, job_ended=False)

    def _create_operator_coordinators(self) -> None:
        try:
            self._operator_coordinators.create()
        except OperatorCoordinatorFailed as e:
            self.status = JobStatus.FAILED
            raise JobExecutionError(
                f"job {self.plan.job_name} ({self.plan.job_id}) failed before its first "
                f"attempt: {e}"
            ) from e

    def _end_attempt(self, attempt: Attempt) -> float:
        """Stops a failed or canceled attempt and records its exception; returns the delay
        before the next attempt, or raises when none follows (canceled, or the restart
        strategy gave up, or the failure is one a restart cannot fix)."""
        # Decided before stopping: the slots remove their local state if the job ends.
        delay = None
        if attempt.failure is not None and attempt.failure.corrupt_checkpoint_file is not None:
            judge_corrupt_restore(
                attempt,
                attempt.failure.corrupt_checkpoint_file,
                self._coordinator,
                self._storage,
                self.plan.restore_root_uri,
            )
        failure = attempt.failure
        if failure is not None:
            fallback = self._rescaler.attempt_failed(attempt.number, failure.error)
            if fallback is not None:
                self._run_graph(fallback)
        poisoned = failure is not None and self._identical.attempt_failed(failure.signature)
        if not self._canceled and (failure is None or failure.recoverable) and not poisoned:
            delay = self.plan.restart_strategy.on_failure(time.monotonic())
        self._supervisor.stop(attempt, job_ended=delay is None)
        self._coordinator.attempt_ended(f"attempt {attempt.number} ended")
        if failure is not None:
            self.status_view.exception_occurred(attempt.number, failure.error, failure.traceback)
            exceptions = self.status_view.snapshot().exceptions  # for `exceptions`
            self._fenced_io.run(lambda: write_exceptions(self._storage, exceptions))
        self._raise_if_canceled()
        assert failure is not None  # an attempt ends here failed, or canceled: raised above
        if delay is None:
            self.status = JobStatus.FAILED
            if poisoned:
                why = self._identical.explain()
            elif failure.recoverable:
                strategy = getattr(self.plan.restart_strategy, "description", "")
                why = f"restart strategy {strategy} gave up"
            else:
                why = "the failure is not one a restart can fix"
            raise JobExecutionError(
                f"job {self.plan.job_name} ({self.plan.job_id}) failed after {attempt.number} "
                f"attempt(s); {why}. Last error: {failure.error}",
                failure.traceback,
            )
        return delay

    def _raise_if_canceled(self) -> None:
        if not self._canceled:
            return
        self.status = JobStatus.CANCELED
        apply_retention_on_cancel(self.plan, self._coordinator, self._storage)
        raise JobCanceledError(f"job {self.plan.job_name} ({self.plan.job_id}) was canceled")

    def _close(self) -> None:
        self._storage_io.close()
        self._channel.close()

    def _on_cancel(self) -> None:
        self._canceled = True

    def _fail_attempt(self, error: str, trace: str, recoverable: bool) -> None:
        """An operator coordinator failed: the running attempt fails with its error."""
        self._supervisor.fail(error, trace, recoverable)

    # --- storage --------------------------------------------------------------------------------

    def _post_storage_done(self, done: Callable[[], None]) -> None:
        """From the storage I/O thread: ``done`` runs on this thread, as mail."""

        def mail() -> None:
            try:
                done()
            except CheckpointFailuresExceeded as e:
                self._supervisor.fail(str(e))

        self._channel.mailbox.put(mail)

    def _settle_storage(self, what: str) -> None:
        """Waits for the coordinator's storage work and runs what it leads to, until none is
        left: before an attempt (a sweep must not run beside new tasks) and at the end (the
        history and ``_metadata`` are on storage before ``run`` returns)."""
        while True:
            self._storage_io.drain(what)
            mails = self._channel.mailbox.drain()
            if not mails:
                return
            for mail in mails:
                mail()
