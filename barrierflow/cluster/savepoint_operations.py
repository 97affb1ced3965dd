"""Savepoint operations of a running job: take a savepoint, or stop the job with one
(``stop``: suspend at the savepoint; ``stop --drain``: end the input first, then terminate),
asked for in this process (``JobClient``, the REST API) or from the command line
(``TriggerSavepoint``, which must carry the job's secret).

Each request becomes a request to the checkpoint coordinator, which triggers it at once and
answers it once, when the savepoint completed or failed.

**Threading:** ``trigger`` from any thread (it hands the request to the JobMaster's mailbox);
everything else on the JobMaster's thread. **I/O:** replies over the control channel.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from concurrent.futures import Future

from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.job_plan import JobPlan
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CheckpointCoordinator
from barrierflow.coordination.savepoint_completion import SavepointResult
from barrierflow.errors import SavepointError
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat

log = logging.getLogger("barrierflow.jobmaster")


def savepoint_kind(stop: bool, drain: bool) -> CheckpointKind:
    """A savepoint the job goes on after; one it stops at; one it ends its input before."""
    if stop and drain:
        return CheckpointKind.TERMINATE
    return CheckpointKind.SUSPEND if stop else CheckpointKind.SAVEPOINT


class SavepointOperations:
    def __init__(
        self,
        plan: JobPlan,
        coordinator: CheckpointCoordinator,
        channel: ControlChannel,
        authorized: Callable[[str, str], bool],
        canceled: Callable[[], bool],
        due_now: Callable[[], None],
    ) -> None:
        """``authorized(job id, secret)``: whether a command-line request may act on the job;
        ``canceled``: whether the job is being canceled (then no savepoint is taken);
        ``due_now``: makes the checkpoint coordinator look at its requests at once."""
        self._plan = plan
        self._coordinator = coordinator
        self._channel = channel
        self._authorized = authorized
        self._canceled = canceled
        self._due_now = due_now
        channel.answer(msg.TriggerSavepoint, self._on_request)

    def trigger(
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

        request = functools.partial(self._request, target_dir, snapshot_format, stop, drain, reply)
        if not self._channel.mailbox.put(request):
            reply(SavepointResult(None, error=f"job {self._plan.job_id} is not running"))
        return future

    def _on_request(self, identity: bytes, message: msg.TriggerSavepoint) -> None:
        def reply(result: SavepointResult) -> None:
            self._channel.send(identity, msg.SavepointReply(0, result.path, result.error))

        if not self._authorized(message.job_id, message.secret):
            reply(SavepointResult(None, error="wrong job id or secret"))
            return
        log.info("Job %s: savepoint requested from the command line", self._plan.job_id)
        self._request(
            message.target_dir or None, message.snapshot_format, message.stop, message.drain, reply
        )

    def _request(
        self,
        target_dir: str | None,
        snapshot_format: SnapshotFormat,
        stop: bool,
        drain: bool,
        reply: Callable[[SavepointResult], None],
    ) -> None:
        """A stop with ``drain`` also tells the sources to end their input."""
        if self._canceled():
            reply(SavepointResult(None, error=f"job {self._plan.job_id} is being canceled"))
            return
        kind = savepoint_kind(stop, drain)
        self._coordinator.trigger_savepoint(
            target_dir or self._plan.savepoint_dir, snapshot_format, kind, reply
        )
        attempt = self._channel.attempt
        if kind is CheckpointKind.TERMINATE and attempt is not None:
            for source in self._plan.graph.source_subtasks:
                self._channel.send_to_task(source, msg.EndInput(attempt))
        self._due_now()  # the savepoint is due at once
