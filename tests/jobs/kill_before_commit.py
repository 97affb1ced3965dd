"""A sink wrapper that SIGKILLs its process once, after a checkpoint completed and before the
sink commits it: the moment a two-phase-commit sink is most fragile.

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import cloudpickle

from barrierflow.datastream.connectors import Sink
from barrierflow.datastream.connectors.base import Committable, Committer, SinkWriter


class KillBeforeCommit(Sink):
    def __init__(self, sink: Sink, marker: str, after_commits: int = 2) -> None:
        self.sink = sink
        self.marker = marker  # created when the kill fires, so it fires once across attempts
        self.after_commits = after_commits
        self.delivery_guarantee = sink.delivery_guarantee
        self.commit_retry = sink.commit_retry

    def check(self, job: Any) -> None:
        self.sink.check(job)

    def create_writer(self, context: Any) -> SinkWriter:
        return self.sink.create_writer(context)

    def create_committer(self, context: Any) -> Committer:
        return _Committer(self.sink.create_committer(context), self)

    def committable_codec(self) -> Any:
        return self.sink.committable_codec()


class _Committer(Committer):
    def __init__(self, inner: Committer, plan: KillBeforeCommit) -> None:
        self._inner = inner
        self._plan = plan
        self._commits = 0

    def commit(self, committables: list[Committable]) -> None:
        if committables:
            self._commits += 1
            if self._commits > self._plan.after_commits and not os.path.exists(self._plan.marker):
                with open(self._plan.marker, "w") as f:
                    f.write(f"before commit of {committables} pid {os.getpid()}\n")
                os.kill(os.getpid(), signal.SIGKILL)
        self._inner.commit(committables)

    def abort_lingering(self, recovery: Any) -> None:
        self._inner.abort_lingering(recovery)

    def close(self) -> None:
        self._inner.close()


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
