"""Where a task's sockets come from: zmq in a slot, in-memory ones in the test harness.

A ``StreamTask`` creates no socket itself; it asks its ``TaskNetwork`` for the control socket to
the JobMaster, one socket per output channel, its mailbox and a poller. The sockets it gets are
used through a small part of ``zmq.Socket``: ``send``, ``send_multipart``, ``recv``,
``recv_multipart``, ``poll``, ``getsockopt(zmq.EVENTS)`` and ``close`` (``barrierflow/testing``
implements the same part in memory).

**Threading:** a network is made on the slot's thread; each socket it returns is then used by
the one task thread that asked for it.
"""

from __future__ import annotations

from typing import Protocol

import zmq

from barrierflow.graph.execution_graph import SubtaskId
from barrierflow.runtime.mailbox import Mailbox

SEND_TIMEOUT_MS = 2000  # below the slot's cancel grace period


class TaskNetwork(Protocol):
    def control(self, identity: bytes) -> zmq.Socket:
        """A DEALER connected to the JobMaster, named ``identity``."""

    def output(self, consumer: SubtaskId, identity: bytes) -> zmq.Socket:
        """A DEALER connected to the input gate of ``consumer``, named ``identity``."""

    def mailbox(self) -> Mailbox: ...

    def poller(self) -> zmq.Poller: ...


class ZmqTaskNetwork:
    """The sockets of the tasks of one slot: TCP to other slots, ``inproc://`` inside it."""

    def __init__(
        self,
        context: zmq.Context,
        jobmaster_endpoint: str,
        endpoint_of: dict[SubtaskId, str],
    ) -> None:
        self._context = context
        self._jobmaster_endpoint = jobmaster_endpoint
        self._endpoint_of = endpoint_of

    def control(self, identity: bytes) -> zmq.Socket:
        return self._dealer(self._jobmaster_endpoint, identity)

    def output(self, consumer: SubtaskId, identity: bytes) -> zmq.Socket:
        return self._dealer(self._endpoint_of[consumer], identity)

    def mailbox(self) -> Mailbox:
        return Mailbox.in_process(self._context)

    def poller(self) -> zmq.Poller:
        return zmq.Poller()

    def _dealer(self, endpoint: str, identity: bytes) -> zmq.Socket:
        socket = self._context.socket(zmq.DEALER)
        socket.setsockopt(zmq.IDENTITY, identity)
        socket.setsockopt(zmq.LINGER, 2000)  # what is queued at close still goes out
        # A send blocks only when the peer closed its socket (credit keeps the queue short):
        # time out, so that the task sees its cancellation instead of hanging in send.
        socket.setsockopt(zmq.SNDTIMEO, SEND_TIMEOUT_MS)
        socket.connect(endpoint)
        return socket
