"""Requests to a running JobMaster from outside the job (``barrierflow cancel``, ``--resume``),
found through the address file the JobMaster keeps in the job's checkpoint directory.

**I/O:** checkpoint storage (the address file) and one zmq request.
"""

from __future__ import annotations

import json

import msgspec
import zmq

from barrierflow.checkpoint import storage_layout as layout
from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.control import messages as msg

PING_TIMEOUT_S = 3.0  # a JobMaster answers a ping from its control thread at once


def read_address(storage: CheckpointDirectory) -> dict | None:
    """What a running JobMaster recorded (endpoint, secret, job name, pid), if anything."""
    data = storage.read_small_file(layout.JOBMASTER_ADDRESS_FILE)
    return json.loads(data) if data is not None else None


def ask(endpoint: str, request: msg.Message, timeout_s: float) -> msg.AnyMessage | None:
    """Sends ``request`` and returns the reply, or None when none came within ``timeout_s``."""
    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        sock.send(msg.encode(request))
        if not sock.poll(int(timeout_s * 1000)):
            return None
        try:
            return msg.decode(sock.recv())
        except msgspec.DecodeError:
            return None
    finally:
        sock.close()
        context.term()
