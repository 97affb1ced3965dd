"""The consumer side of the network: one input gate per subtask, over all its input channels.

A ROUTER socket receives from every producer; frames are sorted into per-channel queues so a
channel can be blocked (aligned checkpoints) while the others are read. Credit: each channel
starts with ``initial_credit`` buffers granted, and a credit goes back when a buffer is taken,
so at most ``initial_credit`` buffers per channel are ever queued here. With buffer debloating
the task also tells every producer how many records a buffer should hold
(``announce_buffer_size``; ``buffer_debloater.py`` decides), a producer that connects later
as soon as it says HELLO.

A priority barrier (unaligned checkpoints) is handed out before anything queued, whatever
channel is blocked, with the buffers that were queued before it on its channel when it arrived:
they precede it, and the task stores them as channel state (they are still processed in turn).
A barrier that came in turn becomes one when its checkpoint went unaligned at this task
(``overtake``), or when its aligned-checkpoint timeout passed while it was queued
(``promote_overdue``), as Flink's input channels convert a queued barrier to a priority event.

**Threading:** task thread only.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import cast

import zmq

from barrierflow.protocol.frames import (
    BUFFER_SIZE,
    CREDIT,
    HEADER,
    Kind,
    check_sequence,
    decode_barrier,
)


def bind_gate_socket(
    context: zmq.Context, tcp_host: str, inproc_name: str
) -> tuple[zmq.Socket, str, str]:
    """A ROUTER for an input gate, bound on ``tcp_host`` (producers of other slots) and on
    ``inproc://<inproc_name>`` (producers of the same slot); returns it and both endpoints."""
    socket = context.socket(zmq.ROUTER)
    socket.setsockopt(zmq.LINGER, 0)
    port = socket.bind_to_random_port(f"tcp://{tcp_host}")
    inproc = f"inproc://{inproc_name}"
    socket.bind(inproc)
    return socket, f"tcp://{tcp_host}:{port}", inproc


@dataclass(frozen=True, slots=True)
class PriorityBarrier:
    """What ``poll_next`` hands out, as payload, for a barrier that overtook its channel."""

    payload: bytes  # the barrier frame
    buffers_before: list[bytes]  # the buffers queued before it on its channel, in order


class InputGate:
    def __init__(
        self, socket: zmq.Socket, num_channels: int, token: int, initial_credit: int
    ) -> None:
        """``socket``: a bound ROUTER (``bind_gate_socket``) that producers connect to."""
        self.socket = socket
        self._token = token
        self._initial_credit = initial_credit
        self._queues: list[deque[tuple[Kind, bytes | None]]] = [
            deque() for _ in range(num_channels)
        ]
        self._identities: list[bytes | None] = [None] * num_channels
        self._received = [0] * num_channels  # per channel, the sequence number expected next
        self._sent_back = [0] * num_channels  # per channel, of the next credit or size frame
        self._buffer_size: bytes | None = None  # the size announced, for late producers
        self._one = CREDIT.pack(1)
        self._blocked: set[int] = set()
        self._finished: set[int] = set()
        self._priority: deque[tuple[int, PriorityBarrier]] = deque()
        self._overtaking = -1  # the checkpoint whose barriers jump their queues
        self._deadlines: list[tuple[int, int, bytes]] = []  # (ns, channel, payload) if queued
        self._next = 0

    @property
    def num_channels(self) -> int:
        return len(self._queues)

    @property
    def is_finished(self) -> bool:
        return len(self._finished) == len(self._queues)

    def block(self, channel: int) -> None:
        self._blocked.add(channel)

    def unblock_all(self) -> None:
        self._blocked.clear()

    def receive_available(self) -> None:
        sock = self.socket
        token = self._token
        while cast(int, sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:  # an int option
            frames = sock.recv_multipart()
            frame_token, kind, channel, sequence = HEADER.unpack(frames[1])
            if frame_token != token or channel >= len(self._queues):
                continue  # a frame of an older attempt or a stranger
            check_sequence(self._received[channel], sequence, f"input channel {channel}")
            self._received[channel] += 1
            if kind == Kind.HELLO:
                self._identities[channel] = frames[0]
                self._grant(channel, CREDIT.pack(self._initial_credit))
                if self._buffer_size is not None:
                    self._send_back(channel, Kind.BUFFER_SIZE, self._buffer_size)
                continue
            payload = frames[2] if len(frames) > 2 else None
            if kind == Kind.PRIORITY_BARRIER:
                assert payload is not None  # a barrier's frame has its body
                self._to_priority(channel, payload)
                continue
            if kind == Kind.BARRIER:
                assert payload is not None
                barrier = decode_barrier(payload)
                if barrier.checkpoint_id == self._overtaking:
                    self._to_priority(channel, payload)
                    continue
                deadline_ns = barrier.timeout_deadline_ns
                if deadline_ns is not None:
                    self._deadlines.append((deadline_ns, channel, payload))
            self._queues[channel].append((Kind(kind), payload))

    def _to_priority(self, channel: int, payload: bytes, at: int | None = None) -> None:
        """``at``: the barrier's place in its queue, whence it is taken out."""
        queue = self._queues[channel]
        before = list(queue)[:at] if at is not None else queue
        self._priority.append(
            (
                channel,
                PriorityBarrier(
                    payload, [p for k, p in before if k == Kind.BUFFER and p is not None]
                ),
            )
        )
        if at is not None:
            del queue[at]

    def _jump(self, channel: int, payload: bytes) -> None:
        """Moves a queued barrier ahead of its queue (if it is still queued)."""
        at = next((i for i, (_, p) in enumerate(self._queues[channel]) if p is payload), None)
        if at is not None:
            self._to_priority(channel, payload, at)

    def overtake(self, checkpoint_id: int) -> None:
        """The task took checkpoint ``checkpoint_id`` unaligned: its barriers, queued or still
        to come, overtake the buffers queued before them."""
        self._overtaking = checkpoint_id
        for ch, queue in enumerate(self._queues):
            for kind, payload in list(queue):
                if kind != Kind.BARRIER or payload is None:  # (a barrier has a payload)
                    continue
                if decode_barrier(payload).checkpoint_id == checkpoint_id:
                    self._jump(ch, payload)

    def promote_overdue(self, now_ns: int) -> None:
        """Queued barriers whose aligned-checkpoint timeout passed overtake their queues."""
        if not self._deadlines:
            return
        due = [d for d in self._deadlines if d[0] < now_ns]
        self._deadlines = [d for d in self._deadlines if d[0] >= now_ns]
        for _, channel, payload in due:
            self._jump(channel, payload)

    def has_priority(self) -> bool:
        """Whether a priority barrier waits (to check between the records of a long buffer)."""
        self.receive_available()
        return bool(self._priority)

    def poll_next(self) -> tuple[int, Kind, bytes | PriorityBarrier | None] | None:
        """A priority barrier first; else the next item of an unblocked channel, round robin;
        None when none is queued."""
        self.receive_available()
        if self._priority:
            channel, barrier = self._priority.popleft()
            return channel, Kind.PRIORITY_BARRIER, barrier
        queues = self._queues
        n = len(queues)
        for i in range(n):
            channel = (self._next + i) % n
            if channel in self._blocked or not queues[channel]:
                continue
            kind, payload = queues[channel].popleft()
            self._next = channel + 1
            if kind == Kind.BUFFER:
                self._grant(channel, self._one)
            elif kind == Kind.END_OF_PARTITION:
                self._finished.add(channel)
            return channel, kind, payload
        return None

    def announce_buffer_size(self, records: int) -> None:
        """Tells every producer to put at most ``records`` records in a buffer from now on
        (buffer debloating); a producer not connected yet is told when it says HELLO."""
        self._buffer_size = BUFFER_SIZE.pack(records)
        for channel, identity in enumerate(self._identities):
            if identity is not None:
                self._send_back(channel, Kind.BUFFER_SIZE, self._buffer_size)

    def _grant(self, channel: int, credit: bytes) -> None:
        self._send_back(channel, Kind.CREDIT, credit)

    def _send_back(self, channel: int, kind: Kind, payload: bytes) -> None:
        head = HEADER.pack(self._token, kind, channel, self._sent_back[channel])
        self._sent_back[channel] += 1
        identity = self._identities[channel]
        assert identity is not None  # only a channel that said hello is sent anything back
        self.socket.send_multipart((identity, head, payload))

    def close(self) -> None:
        self.socket.close()
