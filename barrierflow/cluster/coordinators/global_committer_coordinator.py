"""The operator coordinator of a sink with a global committer: collects every subtask's
committables and commits each checkpoint's once it completes, with retries.

Each subtask sends what its writer prepared at the barrier of N (``Prepared``) before it
acknowledges N, so when N completes every subtask's committables of N are here. They are not
in this coordinator's snapshot of N (taken when N was triggered), but they are in the sink
subtasks' snapshots of N; after a failover each new subtask sends those it answers for
(``Restored``, once, even if none) and this coordinator, restored from the same checkpoint,
commits them once all did. Whatever is pending when a later checkpoint is triggered is in its
snapshot. Commits happen in checkpoint order, one ``GlobalCommitter.commit`` per checkpoint.

**Threading:** the JobMaster's thread (commits included: a slow one delays it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from barrierflow.connectors.interfaces import sink_events
from barrierflow.connectors.interfaces.commit_retry import CommitRetryPolicy, commit_with_retries
from barrierflow.connectors.interfaces.committables import (
    END_OF_INPUT,
    Committable,
    from_state,
    to_state,
)
from barrierflow.connectors.interfaces.sink import GlobalCommitter
from barrierflow.connectors.interfaces.versioned_codec import VersionedCodec, decode_stored
from barrierflow.control.operator_coordinator import OperatorCoordinator, OperatorCoordinatorContext


class GlobalCommitterCoordinator(OperatorCoordinator):
    """``codec``: the sink's committables' (``Sink.committable_codec``)."""

    def __init__(
        self,
        committer: GlobalCommitter,
        codec: VersionedCodec[Any],
        context: OperatorCoordinatorContext,
        retry: CommitRetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.committer = committer
        self._codec = codec
        self._context = context
        self._retry = retry
        self._sleep = sleep
        self.where = f"sink {context.operator_uid!r} ({context.operator_name})"
        self._pending: dict[tuple[int, int], list[Any]] = {}  # (checkpoint, subtask) -> its
        self._restored: int | None = None  # the restored checkpoint, until all reported
        self._reported: set[int] = set()  # subtasks that sent what they restored
        self._finished: dict[int, list[Any]] = {}

    def start(self) -> None:
        pass  # nothing to discover or open: the committer connects at its first commit

    def subtask_ready(self, subtask: int) -> None:
        pass  # a subtask sends what it restored when it opens

    def restore_state(self, checkpoint_id: int | None, state: bytes | None) -> None:
        self._pending = {}
        entries = sink_events.decode_state(state) if state is not None else []
        self._add(from_state(entries, self._codec))
        self._restored = checkpoint_id
        self._reported = set()
        self._finished = {}

    def _add(self, committables: list[Committable]) -> None:
        """Keyed by checkpoint and producing subtask: one sent by a subtask and also held in
        this coordinator's state is kept once."""
        fresh: dict[tuple[int, int], list[Any]] = {}
        for c in committables:
            fresh.setdefault((c.checkpoint_id, c.subtask), []).append(c.data)
        self._pending.update(fresh)

    def handle_event(self, subtask: int, payload: bytes) -> None:
        event = sink_events.decode_event(payload)
        if isinstance(event, sink_events.Prepared):
            self._pending[(event.checkpoint_id, subtask)] = self._decoded(event.committables)
        elif isinstance(event, sink_events.Restored):
            self._add(from_state(event.entries, self._codec))
            self._reported.add(subtask)
            if self._restored is not None and len(self._reported) == self._context.parallelism:
                restored, self._restored = self._restored, None
                self._commit_up_to(restored)
        else:
            self._finished[subtask] = self._decoded(event.committables)
            if len(self._finished) == self._context.parallelism:
                for s, committables in self._finished.items():
                    self._pending[(END_OF_INPUT, s)] = committables
                self._finished = {}
                self._commit_up_to(max(cid for cid, _ in self._pending))

    def _decoded(self, stored: list[Any]) -> list[Any]:
        return [decode_stored(self._codec, s) for s in stored]

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        return sink_events.encode(to_state(self._committables(), self._codec))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._commit_up_to(checkpoint_id)

    def _committables(self) -> list[Committable]:
        return [
            Committable(cid, subtask, data)
            for (cid, subtask), committables in sorted(self._pending.items())
            for data in committables
        ]

    def _commit_up_to(self, checkpoint_id: int) -> None:
        """Commits each pending checkpoint up to ``checkpoint_id``, oldest first; a commit that
        fails after its retries raises, and the job fails over with the rest still pending."""
        for cid in sorted({cid for cid, _ in self._pending if cid <= checkpoint_id}):
            committables = [c for c in self._committables() if c.checkpoint_id == cid]
            commit_with_retries(
                functools.partial(self.committer.commit, cid, committables),
                self._retry,
                self.where,
                f"commit checkpoint {cid} ({len(committables)} committables)",
                self._sleep,
            )
            for key in [k for k in self._pending if k[0] == cid]:
                del self._pending[key]

    def close(self) -> None:
        self.committer.close()
