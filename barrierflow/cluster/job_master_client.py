"""Requests to a running JobMaster from outside the job (``barrierflow cancel``, ``--resume``),
found through the address file the JobMaster keeps in the job's checkpoint directory.

**I/O:** checkpoint storage (the address file) and one zmq request.
"""

from __future__ import annotations

import json
import time

import msgspec
import zmq

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg

PING_TIMEOUT_S = 3.0  # a JobMaster answers a ping from its control thread at once
PING_EVERY_S = 5.0  # while a long request is pending: whether the JobMaster is still there


def read_address(storage: CheckpointDirectory) -> dict | None:
    """What a running JobMaster recorded (endpoint, secret, job name, pid), if anything."""
    data = storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE)
    return json.loads(data) if data is not None else None


class JobMasterGone(Exception):
    """The JobMaster stopped answering pings while a request to it was pending."""


def ask(
    endpoint: str,
    request: msg.Message,
    timeout_s: float,
    ping: msg.PingJob | None = None,
) -> msg.AnyMessage | None:
    """Sends ``request`` and returns the reply, or None when none came within ``timeout_s``.

    With ``ping``, a long wait asks every ``PING_EVERY_S`` whether the JobMaster is still
    there, and raises ``JobMasterGone`` when it is not: a job that ends or a driver that dies
    while a rescale or a savepoint is pending never answers it, and the caller should not wait
    its whole timeout (minutes) for nobody."""
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send(msg.encode(request))
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            slice_s = min(left, PING_EVERY_S) if ping is not None else left
            if sock.poll(int(slice_s * 1000)):
                break
            if ping is not None and ask(endpoint, ping, PING_TIMEOUT_S) is None:
                raise JobMasterGone(endpoint)
        try:
            return msg.decode(sock.recv())
        except msgspec.DecodeError:
            return None
    finally:
        sock.close()
        context.term()
