"""Where a running job can be reached from outside, and who may act on it: the REST API, web
UI and ``/metrics`` (``cluster/rest``), the address file next to the job's checkpoints (the
control endpoint, the REST URL and the job's secret), and the command line's requests that are
not savepoints (``PingJob``, ``CancelJob``).

Only who can read the address file knows the secret, and only the secret cancels the job or
takes a savepoint, over the control channel or the REST API (docs/adr/0010-rest-api-and-metrics.md).

**Threading:** ``open``, ``close`` and the requests on the JobMaster's thread; ``is_secret``
from any thread (the REST server's). The REST server answers on threads of its own and reads
only the status view. **I/O:** the REST server's socket; the address file on checkpoint
storage. **Lifecycle:** ``open`` when the job starts running, ``close`` when it ended.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable

import msgspec

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.checkpoint.storage_retry import StorageUnavailableError, with_storage_retries
from barrierflow.cluster import job_master_client
from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.cluster.job_registry import JobRegistry, RegistryEntry
from barrierflow.cluster.job_status_view import JobStatusView
from barrierflow.cluster.process_identity import this_process_start
from barrierflow.cluster.rest.rest_api import JobControl, RestApi
from barrierflow.cluster.rest.server import RestServer, is_loopback
from barrierflow.control import messages as msg
from barrierflow.errors import JobExecutionError

log = logging.getLogger("barrierflow.jobmaster")


def refuse_if_still_running(storage: CheckpointDirectory, job_id: str) -> None:
    """Before a new JobMaster takes a job over (``--resume``): refuses while the one whose
    address file is there still answers."""
    address = job_master_client.read_address(storage)
    if address is None:
        return
    reply = job_master_client.ask(
        address["endpoint"], msg.PingJob(0, job_id), job_master_client.PING_TIMEOUT_S
    )
    if isinstance(reply, msg.PingJobReply):
        raise JobExecutionError(
            f"job {job_id} is still running (its JobMaster answers at {address['endpoint']}); "
            "cancel it first"
        )


class JobEndpoints:
    def __init__(
        self,
        plan: JobPlan,
        storage: CheckpointDirectory | None,
        channel: ControlChannel,
        on_cancel: Callable[[], None],
    ) -> None:
        """``storage``: the job's checkpoint directory (None: no address file is written);
        ``on_cancel``: cancels the job, on the JobMaster's thread."""
        self._plan = plan
        self._storage = storage
        self._channel = channel
        self._on_cancel = on_cancel
        self._secret = secrets.token_hex(16)
        self._registry = JobRegistry(plan.registry_dir)
        self._entry: RegistryEntry | None = None
        self._rest: RestServer | None = None
        self.rest_url: str | None = None
        channel.answer(msg.PingJob, self._on_ping)
        channel.answer(msg.CancelJob, self._on_cancel_request)

    def is_secret(self, secret: str) -> bool:
        """From any thread: whether ``secret`` is this job's (the REST API's guard)."""
        return hmac.compare_digest(secret, self._secret)

    def authorized(self, job_id: str, secret: str) -> bool:
        return job_id == self._plan.job_id and self.is_secret(secret)

    def open(self, status_view: JobStatusView, control: JobControl) -> None:
        """Starts the REST server (if configured: ``rest.address``, ``rest.port``), then
        publishes the job's address."""
        config = self._plan.rest
        if config.enabled:
            api = RestApi(status_view, control, open_to_read=is_loopback(config.address))
            self._rest = RestServer(api, config)
            self._rest.start()
            self.rest_url = self._rest.url
            log.info("Web UI at %s (job %s)", self.rest_url, self._plan.job_id)
        self._publish_address()
        self._register()

    def _register(self) -> None:
        """Records the job in the user's job registry: ``barrierflow list`` shows it, and the
        job commands find it by its id alone."""
        plan, now = self._plan, int(time.time() * 1000)
        self._entry = RegistryEntry(
            job_id=plan.job_id,
            job_name=plan.job_name,
            state="RUNNING",
            host=socket.gethostname(),
            pid=os.getpid(),
            process_start=this_process_start(),
            started_ms=now,
            updated_ms=now,
            endpoint=self._channel.endpoint,
            rest_url=self.rest_url,
            job_root_uri=self._storage.job_root_uri if self._storage is not None else None,
            cluster_id=plan.leadership.cluster_id,
            leader_epoch=plan.leadership.epoch,
        )
        self._registry.record(self._entry)

    def job_ended(self, state: str, error: str | None = None) -> None:
        """Records in the registry how the job ended (or that this JobMaster no longer leads
        it: SUSPENDED)."""
        if self._entry is not None:
            self._entry = msgspec.structs.replace(
                self._entry, state=state, updated_ms=int(time.time() * 1000), error=error
            )
            self._registry.record(self._entry)

    def close_rest(self) -> None:
        """Stops the REST server (the job ended)."""
        if self._rest is not None:
            self._rest.close()

    def withdraw_address(self) -> None:
        """Removes the address file, last: the job no longer answers there. Storage that stays
        unreachable leaves it behind, which is harmless (a JobMaster that does not answer at
        the address counts as gone: ``refuse_if_still_running``); the job's outcome stands."""
        storage = self._storage
        if storage is None:
            return
        try:
            with_storage_retries(
                lambda: storage.delete_small_file(layout.JOBMASTER_ADDRESS_FILE),
                "remove the job's address file from",
                storage.job_root_uri,
            )
        except (StorageUnavailableError, OSError) as e:
            log.warning("The job's address file stays behind: %s", e)

    def _publish_address(self) -> None:
        """Lets ``barrierflow cancel`` reach this job: the address file under the job's
        checkpoint directory; only who can read it (and so the secret) may cancel. It also
        names the web UI's URL."""
        plan = self._plan
        if self._storage is None:
            endpoint = self._channel.endpoint
            log.info("Job %s runs; its JobMaster listens at %s", plan.job_id, endpoint)
            return
        address = {
            "job_id": plan.job_id,
            "job_name": plan.job_name,
            "endpoint": self._channel.endpoint,
            "secret": self._secret,
            "pid": os.getpid(),
            "rest_url": self.rest_url,
        }
        self._storage.write_small_file(layout.JOBMASTER_ADDRESS_FILE, json.dumps(address).encode())

    def _on_ping(self, identity: bytes, message: msg.PingJob) -> None:
        if message.job_id == self._plan.job_id:
            self._channel.send(identity, msg.PingJobReply(0, message.job_id))

    def _on_cancel_request(self, identity: bytes, message: msg.CancelJob) -> None:
        ok = self.authorized(message.job_id, message.secret)
        reply = msg.CancelJobReply(0, ok, "" if ok else "wrong job id or secret")
        self._channel.send(identity, reply)
        if ok:
            log.warning("Job %s: cancel requested from the command line", self._plan.job_id)
            self._on_cancel()
