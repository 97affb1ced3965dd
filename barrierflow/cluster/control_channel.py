"""The JobMaster's end of the control channel: the ROUTER every slot, task and command line
talks to, the JobMaster's mailbox, and the checkpoint coordinator's ``TaskGateway``.

Requests from the command line (attempt 0) are answered where they arrive, whatever the job
is doing, by the handler registered for their type (``answer``); every other message is handed
to the caller of ``incoming``, which fences and dispatches it.

**Threading:** the JobMaster's thread; the mailbox takes mails from any thread. **I/O:** the
router (zmq; in memory in tests, ``barrierflow/testing/in_memory_network.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import msgspec
import zmq

from barrierflow.cluster.job_master_network import JobMasterNetwork
from barrierflow.control import messages as msg
from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier

log = logging.getLogger("barrierflow.jobmaster")

M = TypeVar("M", bound=msg.Message)
TaskKey = tuple[str, int]


class ControlChannel:
    def __init__(self, network: JobMasterNetwork) -> None:
        self._network = network
        self.router = network.router
        self.endpoint = network.endpoint
        self.mailbox = network.mailbox()
        # The number of the latest attempt: what messages to its tasks are stamped with.
        self.attempt: int | None = None
        self._requests: dict[type, Callable[[bytes, Any], None]] = {}

    def answer(self, kind: type[M], handler: Callable[[bytes, M], None]) -> None:
        """Requests of type ``kind`` go to ``handler(sender, request)`` as they arrive."""
        self._requests[kind] = handler

    def send(self, identity: bytes, message: msg.Message) -> None:
        # A peer that is gone is noticed through heartbeats and the Spark job, not here.
        with contextlib.suppress(zmq.ZMQError):
            self.router.send_multipart((identity, msg.encode(message)), zmq.NOBLOCK)

    def send_to_task(self, task: TaskKey, message: msg.Message) -> None:
        self.send(msg.task_identity(message.attempt, *task), message)

    def incoming(self) -> Iterator[tuple[bytes, msg.AnyMessage]]:
        """The messages waiting on the socket, decoded, with their sender; requests are
        answered and not yielded. Then the mails waiting in the mailbox run."""
        while cast(int, self.router.getsockopt(zmq.EVENTS)) & zmq.POLLIN:  # an int option
            identity, data = self.router.recv_multipart()
            try:
                message = msg.decode(data)
            except msgspec.DecodeError:
                log.warning("Dropped an undecodable control message from %r", identity)
                continue
            handler = self._requests.get(type(message))
            if handler is not None:
                handler(identity, message)
            else:
                yield identity, message
        for mail in self.mailbox.drain():
            mail()

    def poller(self) -> zmq.Poller:
        """A poller that wakes on a message or a mail."""
        poller = self._network.poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.mailbox.socket, zmq.POLLIN)
        return poller

    def close(self) -> None:
        self.router.close()
        self.mailbox.close()
        self._network.close()

    # --- the coordinator's TaskGateway: messages to the tasks of the latest attempt -----------

    def trigger_checkpoint(self, task: TaskKey, barrier: CheckpointBarrier) -> None:
        assert self.attempt is not None  # the coordinator has tasks once an attempt started
        self.send_to_task(
            task,
            msg.TriggerCheckpoint(
                self.attempt, barrier.checkpoint_id, barrier.timestamp_ms, barrier.options
            ),
        )

    def notify_checkpoint_complete(self, task: TaskKey, checkpoint_id: int) -> None:
        assert self.attempt is not None
        self.send_to_task(task, msg.NotifyCheckpointComplete(self.attempt, checkpoint_id))

    def notify_checkpoint_aborted(
        self, task: TaskKey, checkpoint_id: int, references_released: bool
    ) -> None:
        assert self.attempt is not None
        self.send_to_task(
            task, msg.NotifyCheckpointAborted(self.attempt, checkpoint_id, references_released)
        )
