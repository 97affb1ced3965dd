"""JobMaster: runs one job on Spark, attempt after attempt, and coordinates its checkpoints.

An attempt: build the slots' descriptors (restoring the latest completed checkpoint), submit
them as one Spark barrier stage, then supervise: control messages from slots and tasks,
checkpoint triggers and acknowledgements, heartbeats. On a failure (a task reported one, the
Spark job failed, a slot fell silent, too many checkpoint failures), in order:
  1. cancel the attempt and make sure every one of its subtasks stopped (each confirms, or its
     process is gone, or it stayed silent for longer than it takes a slot to stop itself);
  2. cancel the Spark job and wait for it;
  3. ask the restart strategy; give up with the last attempt's error, or wait and start the next
     attempt from the latest restorable checkpoint.
Messages of other attempts are dropped, and their senders told to cancel (fencing).

The REST API, web UI and metrics (``cluster/rest``) read the job through ``status_view``, which
this JobMaster and its checkpoint coordinator feed (docs/adr/0010-rest-api-and-metrics.md).

**Threading:** ``run`` on the caller's thread; ``cancel``, ``trigger_savepoint`` and
``is_secret`` from any thread; the REST server answers on threads of its own and reads only
``status_view``. **I/O:** a zmq ROUTER on the driver; the REST server's HTTP socket; checkpoint
storage through the coordinator.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import logging
import os
import random
import re
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field

import msgspec
import zmq

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.metadata import CheckpointMetadata
from barrierflow.checkpoint.storage import CheckpointStorage, FileSystemSavepointStorage
from barrierflow.cluster import collected_records, job_master_client
from barrierflow.cluster.deployer import Deployer
from barrierflow.cluster.exception_history import write_exceptions
from barrierflow.cluster.job_master_network import JobMasterNetwork, ZmqJobMasterNetwork
from barrierflow.cluster.job_outcome import (
    JobCanceledError,
    JobExecutionError,
    JobExecutionResult,
    JobStatus,
    RestoreStats,
    SavepointError,
)
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_status import TaskState
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.rest.rest_api import RestApi
from barrierflow.cluster.rest.server import RestServer, is_loopback
from barrierflow.cluster.storage_io_thread import StorageIoThread
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointFailuresExceeded,
    ClaimedSnapshot,
    SavepointResult,
)
from barrierflow.coordination.in_memory_storage import InMemoryCheckpointStorage
from barrierflow.coordination.state_assignment import assign_state
from barrierflow.coordination.state_mapping import OperatorFate, map_state
from barrierflow.protocol.checkpoint_barrier import (
    CheckpointBarrier,
    CheckpointKind,
    SnapshotFormat,
)
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.runtime.task_descriptor import TaskDescriptor
from barrierflow.runtime.task_executor import SlotDescriptor
from barrierflow.state.backends import local_job_dir

log = logging.getLogger("barrierflow.jobmaster")

PING_TIMEOUT_S = 3.0


@dataclass
class _Failure:
    error: str
    traceback: str = ""
    recoverable: bool = True  # False: a restart would fail the same way (no restart is tried)


@dataclass
class _Attempt:
    number: int
    token: int
    tasks: frozenset[tuple[str, int]]
    slots: dict[int, tuple[str, int]] = field(default_factory=dict)  # slot -> (host, pid)
    slot_last_seen: dict[int, float] = field(default_factory=dict)
    stopped_slots: set[int] = field(default_factory=set)
    running_tasks: set[tuple[str, int]] = field(default_factory=set)
    finished_tasks: set[tuple[str, int]] = field(default_factory=set)
    ended_inputs: set[tuple[str, int]] = field(default_factory=set)
    restored_checkpoint: int | None = None
    restore_bytes_read: int = 0
    max_restore_ms: float = 0.0
    all_running_at: float | None = None
    all_finished_at: float | None = None
    spark_done: bool = False
    spark_error: BaseException | None = None
    failure: _Failure | None = None


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
        self.rest_url: str | None = None
        self._rest: RestServer | None = None
        self._deployer = deployer
        self._network = network or ZmqJobMasterNetwork(plan.bind_host)
        self._router = self._network.router
        self.endpoint = self._network.endpoint
        self._mailbox = self._network.mailbox()
        self._canceled = False
        # The job's checkpoint directory; without one, the history lives in memory.
        uri = plan.task_config.storage_uri
        self._storage = CheckpointStorage(uri) if uri else None
        claimed = None
        if plan.claim_restored and plan.restore_from is not None:
            claimed = ClaimedSnapshot(plan.restore_root_uri, plan.restore_from)
        # Storage work of the coordinator runs off this thread, which keeps the heartbeats.
        self._storage_io = StorageIoThread(self._post_storage_done)
        self._coordinator = CheckpointCoordinator(
            plan.job_id,
            plan.graph.job_graph,
            self._storage or InMemoryCheckpointStorage(),
            plan.coordinator_config,
            self,
            FileSystemSavepointStorage(),
            first_checkpoint_id=plan.restore_from.checkpoint_id + 1 if plan.restore_from else 1,
            claimed=claimed,
            stats_listener=self.status_view,
            storage_io=self._storage_io,
        )
        if plan.resume:
            try:
                self._take_over()
            except BaseException:
                self._close()
                raise
            self.status_view.history_loaded(self._coordinator.history.records)
        self._attempt: _Attempt | None = None
        self._restores: list[RestoreStats] = []
        self._next_tick = 0.0
        self._secret = secrets.token_hex(16)

    @property
    def status(self) -> JobStatus:
        return self._status

    @status.setter
    def status(self, status: JobStatus) -> None:
        self._status = status
        self.status_view.job_status_changed(status.value)

    def _take_over(self) -> None:
        """Becomes the JobMaster of a job whose previous one died: refuses while that one
        still answers, and when the job left no checkpoint to resume from."""
        address = job_master_client.read_address(self._storage)
        if address is not None:
            reply = job_master_client.ask(
                address["endpoint"], msg.PingJob(0, self.plan.job_id), PING_TIMEOUT_S
            )
            if isinstance(reply, msg.PingJobReply):
                raise JobExecutionError(
                    f"job {self.plan.job_id} is still running (its JobMaster answers at "
                    f"{address['endpoint']}); cancel it first"
                )
        if not self._coordinator.take_over():
            raise JobExecutionError(
                f"job {self.plan.job_id} has no readable checkpoint under "
                f"{self._storage.job_root_uri}; nothing to resume (check the job id and the "
                "checkpoint directory)"
            )

    # --- public -------------------------------------------------------------------------------

    def cancel(self) -> None:
        self._mailbox.put(self._on_cancel)

    def is_secret(self, secret: str) -> bool:
        """From any thread: whether ``secret`` is this job's (the REST API's guard)."""
        return hmac.compare_digest(secret, self._secret)

    def trigger_savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        stop: bool = False,
        drain: bool = False,
    ) -> Future[str]:
        """From any thread: a savepoint into a new directory under ``target_dir`` (None: the
        configured savepoint directory); ``stop`` ends the job with it (``drain``: after ending
        the input). The future gets the savepoint's path, or a ``SavepointError``."""
        future: Future[str] = Future()

        def reply(result: SavepointResult) -> None:
            if result.path is not None:
                future.set_result(result.path)
            else:
                future.set_exception(SavepointError(result.error or "the savepoint failed"))

        request = functools.partial(
            self._request_savepoint, target_dir, snapshot_format, stop, drain, reply
        )
        if not self._mailbox.put(request):
            reply(SavepointResult(None, error=f"job {self.plan.job_id} is not running"))
        return future

    def run(self) -> JobExecutionResult:
        started = time.monotonic()
        number = 0
        try:
            self._start_rest_server()
            self._publish_address()
            while True:
                if self._canceled:  # during the delay before a restart: no new attempt
                    self.status = JobStatus.CANCELED
                    self._apply_retention_on_cancel()
                    raise JobCanceledError(
                        f"job {self.plan.job_name} ({self.plan.job_id}) was canceled"
                    )
                number += 1
                self._settle_storage(f"Attempt {number}")
                restore, restore_uri = self._restore_point()
                attempt = self._start_attempt(number, restore, restore_uri)
                self._supervise(attempt)
                if attempt.failure is None and not self._canceled:
                    self._coordinator.attempt_ended("the job finished")
                    self.status = JobStatus.FINISHED
                    return self._result(number, started)
                # Decided before stopping: the slots remove their local state if the job ends.
                delay = None
                failure = attempt.failure
                if not self._canceled and (failure is None or failure.recoverable):
                    delay = self.plan.restart_strategy.on_failure(time.monotonic())
                self._stop_attempt(attempt, job_ended=delay is None)
                self._coordinator.attempt_ended(f"attempt {number} ended")
                if attempt.failure is not None:
                    self.status_view.exception_occurred(
                        number, attempt.failure.error, attempt.failure.traceback
                    )
                    exceptions = self.status_view.snapshot().exceptions  # for `exceptions`
                    self._storage_io.run(lambda e=exceptions: write_exceptions(self._storage, e))
                if self._canceled:
                    self.status = JobStatus.CANCELED
                    self._apply_retention_on_cancel()
                    raise JobCanceledError(
                        f"job {self.plan.job_name} ({self.plan.job_id}) was canceled"
                    )
                if delay is None:
                    self.status = JobStatus.FAILED
                    why = (
                        f"restart strategy "
                        f"{getattr(self.plan.restart_strategy, 'description', '')} gave up"
                        if failure.recoverable
                        else "the failure is not one a restart can fix"
                    )
                    raise JobExecutionError(
                        f"job {self.plan.job_name} ({self.plan.job_id}) failed after {number} "
                        f"attempt(s); {why}. Last error: {failure.error}",
                        failure.traceback,
                    )
                self.status = JobStatus.RESTARTING
                log.warning(
                    "Attempt %d failed: %s. Restarting in %.1f s (restart %d)",
                    number,
                    failure.error.splitlines()[0],
                    delay,
                    number,
                )
                self._wait(delay)
        finally:
            if self._rest is not None:
                self._rest.close()
            self._coordinator.shutdown(f"job {self.plan.job_id} ended ({self.status.value})")
            self._settle_storage("The job's end")
            if self._storage is not None:
                self._storage.delete_small_file(layout.JOBMASTER_ADDRESS_FILE)
            if self.plan.slot_bind_host == "127.0.0.1":  # local master: the slots' disk is ours
                local = local_job_dir(self.plan.task_config.state_backend, self.plan.job_id)
                shutil.rmtree(local, ignore_errors=True)
            self._close()

    def _close(self) -> None:
        self._storage_io.close()
        self._router.close()
        self._mailbox.close()
        self._network.close()

    def _start_rest_server(self) -> None:
        """The REST API, web UI and ``/metrics`` (``rest.address``, ``rest.port``)."""
        config = self.plan.rest
        if not config.enabled:
            return
        api = RestApi(self.status_view, self, open_to_read=is_loopback(config.address))
        self._rest = RestServer(api, config)
        self._rest.start()
        self.rest_url = self._rest.url
        log.info("Web UI at %s (job %s)", self.rest_url, self.plan.job_id)

    def _publish_address(self) -> None:
        """Lets ``barrierflow cancel`` reach this job: the address file under the job's
        checkpoint directory; only who can read it (and so the secret) may cancel. It also
        names the web UI's URL."""
        if self._storage is None:
            log.info("Job %s runs; its JobMaster listens at %s", self.plan.job_id, self.endpoint)
            return
        self._storage.write_small_file(
            layout.JOBMASTER_ADDRESS_FILE,
            json.dumps(
                {
                    "job_id": self.plan.job_id,
                    "job_name": self.plan.job_name,
                    "endpoint": self.endpoint,
                    "secret": self._secret,
                    "pid": os.getpid(),
                    "rest_url": self.rest_url,
                }
            ).encode(),
        )

    def _apply_retention_on_cancel(self) -> None:
        if self._storage is None:
            return
        retained = self._coordinator.store.all()
        if self.plan.retain_on_cancel:
            for c in retained:
                log.info(
                    "Retained checkpoint %s",
                    self._storage.absolute(layout.checkpoint_dir(c.checkpoint_id)),
                )
            return
        for c in retained:
            self._storage.discard_checkpoint_dir(c.checkpoint_id)
        self._storage.discard_shared_dir()
        log.info(
            "Deleted %d retained checkpoint(s) on cancel (externalized-checkpoint-retention "
            "is not RETAIN_ON_CANCELLATION)",
            len(retained),
        )

    def _handle_request(self, identity: bytes, message: msg.AnyMessage) -> bool:
        """Requests from the command line, in any state of the job. True when handled."""
        if isinstance(message, msg.PingJob):
            if message.job_id == self.plan.job_id:
                reply = msg.encode(msg.PingJobReply(0, message.job_id))
                self._router.send_multipart((identity, reply))
            return True
        if isinstance(message, msg.TriggerSavepoint):
            self._on_savepoint_request(identity, message)
            return True
        if not isinstance(message, msg.CancelJob):
            return False
        ok = self._authorized(message.job_id, message.secret)
        reply = msg.CancelJobReply(0, ok, "" if ok else "wrong job id or secret")
        self._router.send_multipart((identity, msg.encode(reply)))
        if ok:
            log.warning("Job %s: cancel requested from the command line", self.plan.job_id)
            self._canceled = True
        return True

    def _authorized(self, job_id: str, secret: str) -> bool:
        return job_id == self.plan.job_id and hmac.compare_digest(secret, self._secret)

    def _on_savepoint_request(self, identity: bytes, m: msg.TriggerSavepoint) -> None:
        def reply(result: SavepointResult) -> None:
            self._send(identity, msg.SavepointReply(0, result.path, result.error))

        if not self._authorized(m.job_id, m.secret):
            reply(SavepointResult(None, error="wrong job id or secret"))
            return
        log.info("Job %s: savepoint requested from the command line", self.plan.job_id)
        self._request_savepoint(m.target_dir or None, m.snapshot_format, m.stop, m.drain, reply)

    def _request_savepoint(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        stop: bool,
        drain: bool,
        reply: Callable[[SavepointResult], None],
    ) -> None:
        """On this thread. A stop with ``drain`` also tells the sources to end their input."""
        if self._canceled:
            reply(SavepointResult(None, error=f"job {self.plan.job_id} is being canceled"))
            return
        kind = (
            CheckpointKind.TERMINATE
            if stop and drain
            else CheckpointKind.SUSPEND
            if stop
            else CheckpointKind.SAVEPOINT
        )
        self._coordinator.trigger_savepoint(
            target_dir or self.plan.savepoint_dir, snapshot_format, kind, reply
        )
        attempt = self._attempt
        if kind is CheckpointKind.TERMINATE and attempt is not None:
            for source in self.plan.graph.source_subtasks:
                self._send_to_task(source, msg.EndInput(attempt.number))
        self._next_tick = time.monotonic()  # the savepoint is due at once

    # --- attempts -------------------------------------------------------------------------------

    def _post_storage_done(self, done: Callable[[], None]) -> None:
        """From the storage I/O thread: ``done`` runs on this thread, as mail."""

        def mail() -> None:
            try:
                done()
            except CheckpointFailuresExceeded as e:
                if self._attempt is not None and self._attempt.failure is None:
                    self._attempt.failure = _Failure(str(e))

        self._mailbox.put(mail)

    def _settle_storage(self, what: str) -> None:
        """Waits for the coordinator's storage work and runs what it leads to, until none is
        left: before an attempt (a sweep must not run beside new tasks) and at the end (the
        history and ``_metadata`` are on storage before ``run`` returns)."""
        while True:
            self._storage_io.drain(what)
            mails = self._mailbox.drain()
            if not mails:
                return
            for mail in mails:
                mail()

    def _restore_point(self) -> tuple[CheckpointMetadata | None, str | None]:
        coordinator = self._coordinator
        if coordinator.store.latest() is not None:
            metadata = coordinator.latest_restorable()
            if metadata is None:
                raise JobExecutionError(
                    "no retained checkpoint of this job can be read back (see the errors above); "
                    "refusing to restart from scratch, which would duplicate committed output. "
                    "Raise num-retained to keep fallbacks"
                )
            return metadata, self.plan.task_config.storage_uri
        return self.plan.restore_from, self.plan.restore_root_uri

    def _start_attempt(
        self, number: int, restore: CheckpointMetadata | None, restore_uri: str | None
    ) -> _Attempt:
        plan = self.plan
        graph = plan.graph
        token = random.getrandbits(63)
        assignment = None
        if restore is not None:
            assignment = assign_state(restore, graph, plan.allow_non_restored_state)
            left_behind = map_state(restore, graph.job_graph).of_fate(OperatorFate.LEFT_BEHIND)
            if left_behind:
                log.warning(
                    "State of operators %s in checkpoint %d is not restored: the job has no "
                    "such operators (allowed by --allow-non-restored-state)",
                    left_behind,
                    restore.checkpoint_id,
                )
        if restore is not None:
            log.info("Attempt %d restores checkpoint %d", number, restore.checkpoint_id)
        slots = []
        for slot in range(graph.num_slots):
            tasks = []
            for sub in graph.in_slot(slot):
                v = sub.vertex
                tasks.append(
                    TaskDescriptor(
                        job_id=plan.job_id,
                        job_name=plan.job_name,
                        attempt=number,
                        token=token,
                        vertex=v.id,
                        vertex_name=v.name,
                        subtask=sub.subtask,
                        parallelism=v.parallelism,
                        chain=tuple(
                            OperatorSpec(
                                n.uid,
                                n.name,
                                n.kind,
                                n.function,
                                n.key_selector,
                                frozenset(n.side_outputs),
                                n.output_type,
                            )
                            for n in v.chain
                        ),
                        num_input_channels=len(sub.input_channels),
                        outputs=sub.outputs,
                        config=plan.task_config,
                        restore_uri=restore_uri,
                        restore=assignment[sub.id] if assignment is not None else None,
                    )
                )
            slots.append(
                SlotDescriptor(
                    slot,
                    number,
                    self.endpoint,
                    plan.slot_bind_host,
                    tuple(tasks),
                    heartbeat_timeout_s=plan.heartbeat_timeout_s,
                )
            )
        attempt = _Attempt(number, token, frozenset(s.id for s in graph.subtasks))
        attempt.restored_checkpoint = restore.checkpoint_id if restore is not None else None
        self._attempt = attempt
        self.status_view.attempt_started(number, sorted(attempt.tasks))
        self._coordinator.start_attempt(attempt.tasks, graph.source_subtasks)
        self.status = JobStatus.RUNNING
        log.info("Job %s (%s) attempt %d: %d slots", plan.job_name, plan.job_id, number, len(slots))
        self._submitted = self._deployer.submit(
            slots,
            f"{plan.job_name} attempt {number}",
            lambda error, a=attempt: self._mailbox.put(lambda: self._on_spark_done(a, error)),
        )
        return attempt

    def _supervise(self, attempt: _Attempt) -> None:
        poller = self._network.poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._mailbox.socket, zmq.POLLIN)
        self._next_tick = time.monotonic()
        next_heartbeat = time.monotonic()
        while attempt.failure is None and not self._canceled:
            if attempt.spark_done and attempt.finished_tasks == attempt.tasks:
                return
            now = time.monotonic()
            # Trigger only once every task runs: a trigger to a task not yet connected is lost.
            all_running = attempt.running_tasks == attempt.tasks
            if all_running and now >= self._next_tick:
                try:
                    self._next_tick = self._coordinator.tick()
                except CheckpointFailuresExceeded as e:
                    attempt.failure = _Failure(str(e))
                    return
            if now >= next_heartbeat:
                self._heartbeat(attempt, now)
                next_heartbeat = now + 0.5
            wake = min(self._next_tick, next_heartbeat)
            timeout_ms = max(1, int((wake - time.monotonic()) * 1000))
            poller.poll(min(timeout_ms, 500))
            self._drain(attempt)

    def _incoming(self) -> Iterator[tuple[bytes, msg.AnyMessage]]:
        """The control messages waiting on the socket, decoded; command-line requests are
        answered here, whatever the job is doing, and not yielded."""
        while self._router.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            identity, data = self._router.recv_multipart()
            try:
                message = msg.decode(data)
            except msgspec.DecodeError:
                log.warning("Dropped an undecodable control message from %r", identity)
                continue
            if not self._handle_request(identity, message):
                yield identity, message
        for mail in self._mailbox.drain():
            mail()

    def _drain(self, attempt: _Attempt) -> None:
        for identity, message in self._incoming():
            if message.attempt != attempt.number:
                if message.attempt < attempt.number:
                    self._router.send_multipart(
                        (identity, msg.encode(msg.CancelAttempt(message.attempt, "superseded")))
                    )
                continue
            try:
                self._on_message(attempt, message)
            except CheckpointFailuresExceeded as e:
                attempt.failure = _Failure(str(e))

    def _on_message(self, attempt: _Attempt, m: msg.AnyMessage) -> None:
        now = time.monotonic()
        if isinstance(m, msg.SlotRegistered):
            # Silence counts from the first heartbeat: before it, the slot may wait in
            # allGather for slower slots to start.
            attempt.slots[m.slot] = (m.host, m.pid)
        elif isinstance(m, msg.SlotHeartbeat):
            attempt.slot_last_seen[m.slot] = now
            if m.tasks:
                self.status_view.subtask_metrics(m.tasks)
        elif isinstance(m, msg.SlotStopped):
            attempt.stopped_slots.add(m.slot)
        elif isinstance(m, msg.CollectedRecords):
            if m.token == attempt.token:  # else not from this attempt's tasks: never unpickled
                collected_records.deliver(m)
            else:
                log.warning("Dropped collected records with a wrong token (%s)", m.collector)
        elif isinstance(m, msg.TaskRunning):
            attempt.running_tasks.add((m.vertex, m.subtask))
            self.status_view.task_state_changed((m.vertex, m.subtask), TaskState.RUNNING)
            attempt.restore_bytes_read += m.restore_bytes_read
            attempt.max_restore_ms = max(attempt.max_restore_ms, m.restore_ms)
            if attempt.running_tasks == attempt.tasks:
                attempt.all_running_at = now
                if attempt.restored_checkpoint is not None:
                    self._restored(attempt)
                    self._restores.append(
                        RestoreStats(
                            attempt.number,
                            attempt.restored_checkpoint,
                            attempt.restore_bytes_read,
                            attempt.max_restore_ms,
                        )
                    )
                    log.info(
                        "Attempt %d restored checkpoint %d in %.0f ms, reading %d bytes from "
                        "checkpoint storage",
                        attempt.number,
                        attempt.restored_checkpoint,
                        attempt.max_restore_ms,
                        attempt.restore_bytes_read,
                    )
                self._coordinator.all_tasks_running()
        elif isinstance(m, msg.AcknowledgeCheckpoint):
            self._coordinator.on_acknowledge(m)
        elif isinstance(m, msg.DeclineCheckpoint):
            self._coordinator.on_decline(m)
        elif isinstance(m, msg.EndOfInput):
            attempt.ended_inputs.add((m.vertex, m.subtask))
            self._coordinator.source_ended()
            sources = set(self.plan.graph.source_subtasks)
            if sources <= attempt.ended_inputs:
                self._coordinator.sources_finished()
                self._next_tick = now  # the final checkpoint is due at once
        elif isinstance(m, msg.TaskFinished):
            attempt.finished_tasks.add((m.vertex, m.subtask))
            self.status_view.task_state_changed((m.vertex, m.subtask), TaskState.FINISHED)
            if attempt.finished_tasks == attempt.tasks:
                attempt.all_finished_at = now
        elif isinstance(m, msg.TaskFailed) and attempt.failure is None:
            attempt.failure = _Failure(m.error, m.traceback)

    def _restored(self, attempt: _Attempt) -> None:
        """Tells the status view which checkpoint the attempt restored, and from where."""
        own = self._coordinator.store.latest() is not None
        restore = self.plan.restore_from
        self.status_view.checkpoint_restored(
            attempt.restored_checkpoint,
            is_savepoint=not own and restore is not None and restore.is_savepoint,
            external_path=None if own else self.plan.restore_root_uri,
        )

    def _on_spark_done(self, attempt: _Attempt, error: BaseException | None) -> None:
        attempt.spark_done = True
        attempt.spark_error = error
        if error is not None and attempt.failure is None:
            missing = None if attempt.slots else _unloadable_code(error)
            if missing is not None:  # no slot started: the executors cannot load the job
                attempt.failure = _Failure(
                    f"the executors cannot load the job's code ({missing}): make the modules "
                    "the job's functions come from importable there (spark-submit --py-files, "
                    "or install them into the executors' Python); not restarted, since every "
                    "attempt would fail the same way",
                    recoverable=False,
                )
                return
            attempt.failure = _Failure(
                f"the Spark job of attempt {attempt.number} failed: {_first_line(error)}"
            )
        elif error is None and attempt.finished_tasks != attempt.tasks and attempt.failure is None:
            attempt.failure = _Failure("the Spark job ended before all subtasks finished")

    def _on_cancel(self) -> None:
        self._canceled = True

    def _heartbeat(self, attempt: _Attempt, now: float) -> None:
        for slot in attempt.slots:
            self._send(msg.slot_identity(attempt.number, slot), msg.Heartbeat(attempt.number))
        timeout = self.plan.heartbeat_timeout_s
        for slot, seen in attempt.slot_last_seen.items():
            if (
                now - seen > timeout
                and slot not in attempt.stopped_slots
                and attempt.failure is None
            ):
                attempt.failure = _Failure(f"slot {slot} sent no heartbeat for {timeout:g} s")

    def _stop_attempt(self, attempt: _Attempt, job_ended: bool) -> None:
        """Makes sure no subtask of ``attempt`` runs any more, then ends its Spark job.
        ``job_ended``: no attempt follows, so the slots remove their local state."""
        self._coordinator.abort_all(f"attempt {attempt.number} is stopping")
        cancel = msg.CancelAttempt(
            attempt.number, "the attempt failed or was canceled", job_ended=job_ended
        )
        for slot in attempt.slots:
            self._send(msg.slot_identity(attempt.number, slot), cancel)
        for vertex, subtask in attempt.tasks:
            self._send(msg.task_identity(attempt.number, vertex, subtask), cancel)
        deadline = time.monotonic() + self.plan.heartbeat_timeout_s + 10
        while time.monotonic() < deadline:
            running = [s for s in attempt.slots if not self._slot_gone(attempt, s)]
            if not running:
                break
            self._router.poll(100)
            self._drain_stale(attempt)
        else:
            log.error(
                "Slots %s of attempt %d did not confirm that they stopped", running, attempt.number
            )
        self._submitted.cancel()
        if not self._submitted.join(30):
            log.error("The Spark job of attempt %d did not end within 30 s", attempt.number)

    def _slot_gone(self, attempt: _Attempt, slot: int) -> bool:
        if slot in attempt.stopped_slots:
            return True
        host, pid = attempt.slots[slot]
        if host == socket.gethostname():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        silent = time.monotonic() - attempt.slot_last_seen.get(slot, 0)
        return silent > self.plan.heartbeat_timeout_s + 1

    def _drain_stale(self, attempt: _Attempt) -> None:
        """While stopping: only note which slots stopped or still live."""
        for _identity, m in self._incoming():
            if m.attempt == attempt.number:
                if isinstance(m, msg.SlotStopped):
                    attempt.stopped_slots.add(m.slot)
                elif isinstance(m, msg.SlotHeartbeat):
                    attempt.slot_last_seen[m.slot] = time.monotonic()
                elif isinstance(m, msg.SlotRegistered):
                    attempt.slots[m.slot] = (m.host, m.pid)
                    attempt.slot_last_seen[m.slot] = time.monotonic()
                    self._send(
                        msg.slot_identity(m.attempt, m.slot),
                        msg.CancelAttempt(m.attempt, "stopping"),
                    )

    def _wait(self, delay_s: float) -> None:
        """Sleeps before a restart, still answering cancel requests."""
        deadline = time.monotonic() + delay_s
        while not self._canceled and time.monotonic() < deadline:
            self._router.poll(max(1, min(100, int((deadline - time.monotonic()) * 1000))))
            for _ in self._incoming():
                pass  # messages of the failed attempt; requests were answered

    # --- messaging ------------------------------------------------------------------------------

    def _send(self, identity: bytes, message: msg.Message) -> None:
        # A peer that is gone is noticed through heartbeats and the Spark job, not here.
        with contextlib.suppress(zmq.ZMQError):
            self._router.send_multipart((identity, msg.encode(message)), zmq.NOBLOCK)

    # --- the coordinator's TaskGateway: messages to the tasks of the running attempt ----------

    def trigger_checkpoint(self, task: tuple[str, int], barrier: CheckpointBarrier) -> None:
        attempt = self._attempt.number
        self._send_to_task(
            task,
            msg.TriggerCheckpoint(
                attempt, barrier.checkpoint_id, barrier.timestamp_ms, barrier.options
            ),
        )

    def notify_checkpoint_complete(self, task: tuple[str, int], checkpoint_id: int) -> None:
        self._send_to_task(task, msg.NotifyCheckpointComplete(self._attempt.number, checkpoint_id))

    def notify_checkpoint_aborted(
        self, task: tuple[str, int], checkpoint_id: int, references_released: bool
    ) -> None:
        self._send_to_task(
            task,
            msg.NotifyCheckpointAborted(self._attempt.number, checkpoint_id, references_released),
        )

    def _send_to_task(self, task: tuple[str, int], message: msg.Message) -> None:
        self._send(msg.task_identity(message.attempt, *task), message)

    def _result(self, attempts: int, started: float) -> JobExecutionResult:
        attempt = self._attempt
        processing_ms = 0
        if attempt and attempt.all_running_at and attempt.all_finished_at:
            processing_ms = int((attempt.all_finished_at - attempt.all_running_at) * 1000)
        coordinator = self._coordinator
        ids = tuple(c.checkpoint_id for c in coordinator.store.all())
        final = None
        if ids and self._storage is not None:
            final = self._storage.absolute(layout.metadata_path(ids[-1]))
        history = tuple(coordinator.history.records)
        completed, failed = coordinator.num_completed, coordinator.num_failed
        return JobExecutionResult(
            job_id=self.plan.job_id,
            job_name=self.plan.job_name,
            attempts=attempts,
            net_runtime_ms=int((time.monotonic() - started) * 1000),
            final_checkpoint=final,
            checkpoint_ids=ids,
            num_completed_checkpoints=completed,
            num_failed_checkpoints=failed,
            checkpoint_history=history,
            processing_ms=processing_ms,
            restores=tuple(self._restores),
        )


_UNLOADABLE = re.compile(
    r"(ModuleNotFoundError: No module named [^\n]+|AttributeError: Can't get attribute [^\n]+)"
)


def _unloadable_code(error: BaseException) -> str | None:
    """The error by which a Python worker could not unpickle the slots' code, if that is why
    the Spark job failed."""
    found = _UNLOADABLE.search(str(error))
    return found.group(1).strip() if found else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    for marker in ("SlotFailure:", "UserFunctionError:"):
        if marker in text:
            return text[text.index(marker) :].splitlines()[0]
    return text.splitlines()[0] if text else type(error).__name__
