"""The consumer side of the network: one input gate per subtask, over all its input channels.

A ROUTER socket receives from every producer; frames are sorted into per-channel queues so a
channel can be blocked (aligned checkpoints) while the others are read. Credit: each channel
starts with ``initial_credit`` buffers granted, and a credit goes back when a buffer is taken,
so at most ``initial_credit`` buffers per channel are ever queued here.

**Threading:** task thread only.
"""

from __future__ import annotations

from collections import deque

import zmq

from barrierflow.protocol.frames import CREDIT, HEADER, Kind, header


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
        self._credit_frames = [header(token, Kind.CREDIT, ch) for ch in range(num_channels)]
        self._one = CREDIT.pack(1)
        self._blocked: set[int] = set()
        self._finished: set[int] = set()
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
        while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            frames = sock.recv_multipart()
            frame_token, kind, channel = HEADER.unpack(frames[1])
            if frame_token != token or channel >= len(self._queues):
                continue  # a frame of an older attempt or a stranger
            if kind == Kind.HELLO:
                self._identities[channel] = frames[0]
                sock.send_multipart(
                    (frames[0], self._credit_frames[channel], CREDIT.pack(self._initial_credit))
                )
                continue
            payload = frames[2] if len(frames) > 2 else None
            self._queues[channel].append((Kind(kind), payload))

    def poll_next(self) -> tuple[int, Kind, bytes | None] | None:
        """The next item of an unblocked channel, round robin; None when none is queued."""
        self.receive_available()
        queues = self._queues
        n = len(queues)
        for i in range(n):
            channel = (self._next + i) % n
            if channel in self._blocked or not queues[channel]:
                continue
            kind, payload = queues[channel].popleft()
            self._next = channel + 1
            if kind == Kind.BUFFER:
                self.socket.send_multipart(
                    (self._identities[channel], self._credit_frames[channel], self._one)
                )
            elif kind == Kind.END_OF_PARTITION:
                self._finished.add(channel)
            return channel, kind, payload
        return None

    def close(self) -> None:
        self.socket.close()
