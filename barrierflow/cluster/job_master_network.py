"""The JobMaster's side of the control channel: a ROUTER that every slot, task and command
line connects to, the JobMaster's mailbox, and pollers over them.

``ZmqJobMasterNetwork`` binds a TCP port; ``barrierflow/testing`` has one in memory, so that the
JobMaster is tested without a network.

**Threading:** made and used on the JobMaster's thread; the mailbox takes mails from any thread.
"""

from __future__ import annotations

from typing import Protocol

import zmq

from barrierflow.runtime.mailbox import Mailbox


class JobMasterNetwork(Protocol):
    endpoint: str  # where slots, tasks and the command line reach the router

    @property
    def router(self) -> zmq.Socket: ...

    def mailbox(self) -> Mailbox: ...

    def poller(self) -> zmq.Poller: ...

    def close(self) -> None:
        """After the router and the mailboxes were closed."""


class ZmqJobMasterNetwork:
    def __init__(self, bind_host: str) -> None:
        self._context = zmq.Context()
        self.router = self._context.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        port = self.router.bind_to_random_port(f"tcp://{bind_host}")
        self.endpoint = f"tcp://{bind_host}:{port}"

    def mailbox(self) -> Mailbox:
        return Mailbox.in_process(self._context)

    def poller(self) -> zmq.Poller:
        return zmq.Poller()

    def close(self) -> None:
        self._context.term()
