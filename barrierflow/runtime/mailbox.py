"""The task's mailbox: other threads put mails, the task thread runs them between buffers.

A mail is a zero-argument callable. ``put`` also sends an empty frame on ``push``, so that the
task thread, waiting in a poll that includes ``socket`` (the other end), wakes up.

**Threading:** ``put`` from any thread; ``drain`` and ``socket`` (for the task's poll) from the
task thread only.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Callable

import zmq


class Mailbox:
    def __init__(self, pull: zmq.Socket, push: zmq.Socket) -> None:
        """``pull`` and ``push``: two connected ends (``Mailbox.in_process`` makes them)."""
        self._mails: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self._pull = pull
        self._push = push  # used under _lock by any thread

    @classmethod
    def in_process(cls, context: zmq.Context) -> Mailbox:
        endpoint = f"inproc://mailbox-{uuid.uuid4().hex}"
        pull = context.socket(zmq.PULL)
        pull.bind(endpoint)
        push = context.socket(zmq.PUSH)
        push.connect(endpoint)
        return cls(pull, push)

    @property
    def socket(self) -> zmq.Socket:
        return self._pull

    def put(self, mail: Callable[[], None]) -> bool:
        """Queues ``mail``; False (and dropped) once the mailbox is closed."""
        with self._lock:
            if self._closed:
                return False
            self._mails.append(mail)
            self._push.send(b"", zmq.NOBLOCK)
            return True

    def drain(self) -> list[Callable[[], None]]:
        while self._pull.poll(0):
            self._pull.recv()
        with self._lock:
            mails = list(self._mails)
            self._mails.clear()
        return mails

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._push.close(linger=0)
        self._pull.close(linger=0)
