"""Cuts a data connection between two slots of a running job: the test facility behind the
channel layer's fault hook (``runtime/network/channel_faults.py``).

A test makes a control directory and arms a cut in it (``ChannelCuts.arm``); the job program
calls ``install(control_dir)`` before ``execute()``, which hands the hook to every task. The
next frame any output channel to another slot sends after the cut was armed is lost, as a cut
connection loses what is in flight; the first channel to claim the armed cut (an atomic
rename, once across processes) records it in ``fired.json``. The control directory must be on
a disk every process of the job sees (a local directory with ``local[N]`` Spark).

**Threading:** ``cut`` from any task thread. **I/O:** one ``stat`` of the control directory's
plan file at most every ``CHECK_EVERY_S`` per process, and the claim.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass

from barrierflow.runtime.network import channel_faults

CHECK_EVERY_S = 0.01
_PLAN = "armed"
_FIRED = "fired.json"
_next_check: dict[str, float] = {}  # per control directory, in this process
_lock = threading.Lock()


@dataclass(frozen=True)
class ChannelCuts:
    """A ``ChannelFaultHook``: small and frozen, it pickles into every task's configuration."""

    control_dir: str

    def arm(self) -> None:
        """The next frame sent between two slots is lost with its connection."""
        os.makedirs(self.control_dir, exist_ok=True)
        with open(os.path.join(self.control_dir, _PLAN), "w"):
            pass

    def fired(self) -> list[dict]:
        """The cuts so far: which subtask's channel, when (epoch seconds), in which process."""
        try:
            with open(os.path.join(self.control_dir, _FIRED)) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def cut(self, producer: str, channel: int) -> bool:
        now = time.monotonic()
        with _lock:
            if now < _next_check.get(self.control_dir, 0.0):
                return False
            _next_check[self.control_dir] = now + CHECK_EVERY_S
        plan = os.path.join(self.control_dir, _PLAN)
        try:  # only one claimer's rename succeeds
            os.rename(plan, f"{plan}.claimed.{os.getpid()}.{uuid.uuid4().hex}")
        except FileNotFoundError:
            return False
        record = {"producer": producer, "channel": channel, "at": time.time(), "pid": os.getpid()}
        with open(os.path.join(self.control_dir, _FIRED), "a") as f:
            f.write(json.dumps(record) + "\n")
        return True


def install(control_dir: str) -> ChannelCuts:
    """In a job program, before ``execute()``: its connections between slots can be cut
    through ``control_dir``."""
    cuts = ChannelCuts(os.path.abspath(control_dir))
    os.makedirs(cuts.control_dir, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(cuts.control_dir, _PLAN))
    channel_faults.install(cuts)
    return cuts
