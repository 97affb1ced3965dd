"""In-memory stand-ins for the sockets of a task or of a JobMaster: no network, no zmq context.

``InMemorySocket`` implements the part of ``zmq.Socket`` that barrierflow uses (``send``,
``send_multipart``, ``recv``, ``recv_multipart``, ``poll``, ``getsockopt(zmq.EVENTS)``,
``close``). What its owner sends goes to ``sent`` (or to a ``peer``'s inbox); what the test
puts in ``inbox`` its owner receives. ``InMemoryPoller.poll`` waits until a registered socket
has something to receive or the timeout passes, and counts the waits that found nothing: a
task that waits with nothing to receive is idle.

**Threading:** sockets may be fed from another thread than their owner's (the JobMaster
harness does): every inbox is guarded by one condition per network.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import zmq

from barrierflow.control import messages as msg
from barrierflow.graph.execution_graph import SubtaskId
from barrierflow.protocol.frames import BUFFER_SIZE, CREDIT, HEADER, Kind, header
from barrierflow.runtime.mailbox import Mailbox


class InMemorySocket:
    def __init__(
        self,
        name: str,
        condition: threading.Condition,
        peer: InMemorySocket | None = None,
        on_send: Callable[[list[bytes]], None] | None = None,
    ) -> None:
        self.name = name
        self._condition = condition
        self._inbox: deque[list[bytes]] = deque()
        self.sent: list[list[bytes]] = []
        self.peer = peer
        self._on_send = on_send
        self.closed = False
        self.linger_at_close: int | None = None  # what close() was given; None: the default

    # --- the test's side ------------------------------------------------------------------------

    def deliver(self, frames: list[bytes]) -> None:
        """Puts a message for the owner to receive."""
        with self._condition:
            self._inbox.append([bytes(f) for f in frames])
            self._condition.notify_all()

    def take_sent(self) -> list[list[bytes]]:
        """What the owner sent since the last call."""
        with self._condition:
            sent, self.sent = self.sent, []
        return sent

    # --- the owner's side (zmq.Socket) ----------------------------------------------------------

    def send(self, data: bytes, flags: int = 0, copy: bool = True) -> None:
        self.send_multipart([data])

    def send_multipart(self, frames, flags: int = 0, copy: bool = True) -> None:
        if self.closed:
            raise zmq.ZMQError(zmq.ENOTSOCK, f"socket {self.name} is closed")
        message = [bytes(f) for f in frames]
        if self.peer is not None:
            self.peer.deliver(message)
        else:
            with self._condition:
                self.sent.append(message)
        if self._on_send is not None:
            self._on_send(message)

    def recv(self, flags: int = 0) -> bytes:
        return self.recv_multipart(flags)[-1]

    def recv_multipart(self, flags: int = 0) -> list[bytes]:
        with self._condition:
            if not self._inbox:
                raise zmq.Again(f"nothing to receive on {self.name}")
            return self._inbox.popleft()

    def poll(self, timeout: int | None = None, flags: int = zmq.POLLIN) -> int:
        return InMemoryPoller(self._condition, {self}).wait(timeout)

    def getsockopt(self, option: int) -> int:
        if option != zmq.EVENTS:
            raise NotImplementedError(f"in-memory sockets answer zmq.EVENTS only, not {option}")
        with self._condition:
            return zmq.POLLIN if self._inbox else 0

    def close(self, linger: int | None = None) -> None:
        self.closed = True
        self.linger_at_close = linger

    @property
    def readable(self) -> bool:
        return bool(self._inbox)


class InMemoryPoller:
    def __init__(
        self, condition: threading.Condition, sockets: set[InMemorySocket] | None = None
    ) -> None:
        self._condition = condition
        self._sockets: set[InMemorySocket] = set(sockets or ())
        self.idle_waits = 0  # waits that found nothing to receive

    def register(self, socket: InMemorySocket, flags: int = zmq.POLLIN) -> None:
        self._sockets.add(socket)

    def poll(self, timeout: int | None = None) -> list[tuple[InMemorySocket, int]]:
        self.wait(timeout)
        with self._condition:
            return [(s, zmq.POLLIN) for s in self._sockets if s.readable]

    def wait(self, timeout_ms: int | None) -> int:
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        with self._condition:
            while not any(s.readable for s in self._sockets):
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    self.idle_waits += 1
                    return 0
                self._condition.wait(remaining)
            return zmq.POLLIN


class InMemoryTaskNetwork:
    """A ``TaskNetwork`` for one task: its control socket, one socket per output consumer.

    ``output_credit``: the credit each output channel is granted when it says HELLO (None:
    as much as it will ever need; a number: that much, and the test grants more with
    ``grant_credit``)."""

    def __init__(self, output_credit: int | None = None) -> None:
        self.condition = threading.Condition()
        self.control_socket: InMemorySocket | None = None
        self.outputs: dict[SubtaskId, InMemorySocket] = {}
        self.pollers: list[InMemoryPoller] = []
        self._output_credit = output_credit
        self._channel_of: dict[SubtaskId, tuple[int, int]] = {}  # (token, channel) from HELLO
        self._credits_sent: dict[SubtaskId, int] = {}

    def socket(self, name: str, **kwargs) -> InMemorySocket:
        return InMemorySocket(name, self.condition, **kwargs)

    def control(self, identity: bytes) -> InMemorySocket:
        self.control_socket = self.socket(f"control {identity.decode()}")
        return self.control_socket

    def output(self, consumer: SubtaskId, identity: bytes) -> InMemorySocket:
        def on_send(frames: list[bytes]) -> None:
            token, kind, channel, _ = HEADER.unpack(frames[0])
            if kind == Kind.HELLO:
                self._channel_of[consumer] = (token, channel)
                credit = self._output_credit if self._output_credit is not None else 1 << 30
                self.grant_credit(consumer, credit)

        socket = self.socket(f"output to {consumer}", on_send=on_send)
        self.outputs[consumer] = socket
        return socket

    def grant_credit(self, consumer: SubtaskId, buffers: int) -> None:
        """The consumer grants the output channel to it credit for ``buffers`` more."""
        token, channel = self._channel_of[consumer]
        sequence = self._credits_sent.get(consumer, 0)
        self._credits_sent[consumer] = sequence + 1
        self.outputs[consumer].deliver(
            [header(token, Kind.CREDIT, channel, sequence), CREDIT.pack(buffers)]
        )

    def announce_buffer_size(self, consumer: SubtaskId, records: int) -> None:
        """The consumer asks the output channel to it for buffers of ``records`` records
        (buffer debloating), in the sequence of its credits."""
        token, channel = self._channel_of[consumer]
        sequence = self._credits_sent.get(consumer, 0)
        self._credits_sent[consumer] = sequence + 1
        self.outputs[consumer].deliver(
            [header(token, Kind.BUFFER_SIZE, channel, sequence), BUFFER_SIZE.pack(records)]
        )

    def mailbox(self) -> Mailbox:
        pull = self.socket("mailbox")
        return Mailbox(pull, self.socket("mailbox push", peer=pull))

    def poller(self) -> InMemoryPoller:
        poller = InMemoryPoller(self.condition)
        self.pollers.append(poller)
        return poller

    @property
    def idle_waits(self) -> int:
        return sum(p.idle_waits for p in self.pollers)


class InMemoryJobMasterNetwork:
    """A ``JobMasterNetwork`` in memory. The test plays every slot, task and command line:
    ``deliver`` sends a message from an identity, ``sent`` decodes what the JobMaster sent."""

    endpoint = "inmemory://job-master"

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.router = InMemorySocket("job master", self.condition)
        self._sent: list[tuple[bytes, msg.AnyMessage]] = []

    def mailbox(self) -> Mailbox:
        pull = InMemorySocket("job master mailbox", self.condition)
        return Mailbox(pull, InMemorySocket("job master mailbox push", self.condition, peer=pull))

    def poller(self) -> InMemoryPoller:
        return InMemoryPoller(self.condition)

    def close(self) -> None:
        pass

    def deliver(self, identity: bytes, message: msg.Message) -> None:
        self.router.deliver([identity, msg.encode(message)])

    def sent(self) -> list[tuple[bytes, msg.AnyMessage]]:
        """Everything the JobMaster sent so far, as (to whom, message), oldest first."""
        for identity, data in self.router.take_sent():
            self._sent.append((identity, msg.decode(data)))
        return list(self._sent)
