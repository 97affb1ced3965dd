"""A sink wrapper that SIGKILLs its process once, after a checkpoint completed and before the
sink commits it: the moment a two-phase-commit sink is most fragile.

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import cloudpickle


class KillBeforeCommit:
    def __init__(self, sink: Any, marker: str, after_commits: int = 2) -> None:
        self.sink = sink
        self.marker = marker  # created when the kill fires, so it fires once across attempts
        self.after_commits = after_commits

    def create_writer(self, context: Any) -> _Writer:
        return _Writer(self.sink.create_writer(context), self)


class _Writer:
    def __init__(self, inner: Any, plan: KillBeforeCommit) -> None:
        self._inner = inner
        self._plan = plan
        self._commits = 0

    def write(self, records: list) -> None:
        self._inner.write(records)

    def prepare_commit(self, checkpoint_id: int) -> list[dict]:
        return self._inner.prepare_commit(checkpoint_id)

    def commit(self, committables: list[dict]) -> None:
        if committables:
            self._commits += 1
            if self._commits > self._plan.after_commits and not os.path.exists(self._plan.marker):
                with open(self._plan.marker, "w") as f:
                    f.write(f"before commit of {committables} pid {os.getpid()}\n")
                os.kill(os.getpid(), signal.SIGKILL)
        self._inner.commit(committables)

    def recover(self, committables: list[dict], parallelism: int) -> None:
        self._inner.recover(committables, parallelism)

    def close(self) -> None:
        self._inner.close()


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
