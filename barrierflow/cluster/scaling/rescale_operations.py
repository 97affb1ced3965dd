"""Rescales asked of a running job from outside its loop: ``JobMaster.rescale`` (``JobClient``,
the REST API's ``PUT /jobs/:id/resource-requirements``, the autoscaler) and the command line's
``RescaleJob`` over the control channel. Each goes to the ``Rescaler`` as mail, on the
JobMaster's thread, with what it checks: whether the job runs and checkpoints.

**Threading:** ``rescale`` from any thread; the rest on the JobMaster's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future

import msgspec

from barrierflow.cluster.control_channel import ControlChannel
from barrierflow.cluster.scaling.rescaler import Rescaler, RescaleRecord, RescaleRefused
from barrierflow.control import messages as msg

log = logging.getLogger("barrierflow.jobmaster")


class RescaleOperations:
    def __init__(
        self,
        rescaler: Rescaler,
        channel: ControlChannel,
        authorized: Callable[[str, str], bool],
        running: Callable[[], bool],
        checkpointing: bool,
    ) -> None:
        """``authorized(job id, secret)``: whether a command-line request may act on the job;
        ``running``: whether every task of the job runs now."""
        self._rescaler = rescaler
        self._channel = channel
        self._authorized = authorized
        self._running = running
        self._checkpointing = checkpointing
        channel.answer(msg.RescaleJob, self._on_request)

    def rescale(
        self,
        parallelism: int | None,
        per_operator: Mapping[str, int] | None = None,
        reason: str = "asked for",
        trigger: str = "manual",
        per_vertex: Mapping[str, int] | None = None,
    ) -> Future[RescaleRecord]:
        """From any thread; ``per_vertex``: vertex id (of the running graph) -> parallelism,
        as the REST API names vertices. The future ends with the rescale's record once the job
        runs at the new parallelism, or with ``RescaleRefused`` saying why nothing changed."""
        answer: Future[RescaleRecord] = Future()

        def mail() -> None:
            operators = dict(per_operator or {})
            for vertex in self._rescaler.graph.job_graph.vertices:
                if per_vertex and vertex.id in per_vertex:
                    operators.update(
                        dict.fromkeys((n.uid for n in vertex.chain), per_vertex[vertex.id])
                    )
            started = self._rescaler.request(
                parallelism,
                operators,
                reason,
                trigger,
                self._running(),
                self._checkpointing,
            )
            started.add_done_callback(lambda done: _pass_on(done, answer))

        if not self._channel.mailbox.put(mail):
            answer.set_exception(RescaleRefused("the job is not running"))
        return answer

    def _on_request(self, identity: bytes, message: msg.RescaleJob) -> None:
        def reply(done: Future[RescaleRecord]) -> None:
            error = done.exception()
            answer = (
                msg.RescaleJobReply(0, error=str(error))
                if error is not None
                else msg.RescaleJobReply(0, record=msgspec.json.encode(done.result()))
            )
            self._channel.send(identity, answer)

        if not self._authorized(message.job_id, message.secret):
            self._channel.send(identity, msg.RescaleJobReply(0, error="wrong job id or secret"))
            return
        started = self._rescaler.request(
            message.parallelism or None,
            message.per_operator,
            message.reason,
            "manual",
            self._running(),
            self._checkpointing,
        )
        started.add_done_callback(reply)


def _pass_on(done: Future, to: Future) -> None:
    error = done.exception()
    if error is not None:
        to.set_exception(error)
    else:
        to.set_result(done.result())
