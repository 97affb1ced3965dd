"""A sink wrapper that SIGKILLs its process once, as soon as its subtask hears that a checkpoint
completed: the moment an at-least-once sink must already have delivered every record written
before that checkpoint's barrier (what is still queued in its client dies with the process).

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import Future
from typing import Any

import cloudpickle

from barrierflow.datastream.connectors import Sink
from barrierflow.datastream.connectors.base import Committer, SinkWriter


class KillAfterCompletion(Sink):
    def __init__(self, sink: Sink, marker: str, after_checkpoint: int = 3) -> None:
        self.sink = sink
        self.marker = marker  # created when the kill fires, so it fires once across attempts
        self.after_checkpoint = after_checkpoint
        self.delivery_guarantee = sink.delivery_guarantee
        self.commit_retry = sink.commit_retry

    def check(self, job: Any) -> None:
        self.sink.check(job)

    def create_writer(self, context: Any) -> SinkWriter:
        return _Writer(self.sink.create_writer(context), self, context.subtask)

    def create_committer(self, context: Any) -> Committer | None:
        return self.sink.create_committer(context)

    def committable_codec(self) -> Any:
        return self.sink.committable_codec()


class _Writer(SinkWriter):
    def __init__(self, inner: SinkWriter, plan: KillAfterCompletion, subtask: int) -> None:
        self._inner = inner
        self._plan = plan
        self._subtask = subtask

    def write(self, records: list[Any]) -> None:
        self._inner.write(records)

    def prepare_commit(self, checkpoint_id: int) -> list[Any]:
        return self._inner.prepare_commit(checkpoint_id)

    def flushing(self, checkpoint_id: int) -> Future[None] | None:
        return self._inner.flushing(checkpoint_id)

    def snapshot_state(self, checkpoint_id: int) -> list[Any]:
        return self._inner.snapshot_state(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        plan = self._plan
        if (
            self._subtask == 0
            and checkpoint_id >= plan.after_checkpoint
            and not os.path.exists(plan.marker)
        ):
            with open(plan.marker, "w") as f:
                f.write(f"after checkpoint {checkpoint_id} pid {os.getpid()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        self._inner.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        self._inner.close()


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))
