"""The operator that reads a source: its splits' positions are its operator state.

**Threading:** the task thread only.
"""

from __future__ import annotations

from typing import Any

from barrierflow.connectors.source import SourceReader, SourceReaderContext
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSnapshot,
    UserFunctionError,
    restore_operator_state,
)
from barrierflow.state.operator_state import OperatorStateStore


class SourceOperator(Operator):
    """Reads splits; its operator state is the position of each split (split state), or, for a
    source that picks its own splits on restore (``assign_splits``), of every split (union)."""

    SPLITS = "splits"

    def open(self, ctx: OperatorContext) -> None:
        self._where = f"source {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self.state = OperatorStateStore()
        source = self.spec.function
        self._union = callable(getattr(source, "assign_splits", None))
        if ctx.restore is not None:
            restore_operator_state(self.state, ctx)
        if ctx.restore is None:
            splits = source.initial_splits(ctx.subtask, ctx.parallelism)
        elif self._union:
            everyone = self.state.get_union_list_state(self.SPLITS).get()
            splits = source.assign_splits(everyone, ctx.subtask, ctx.parallelism)
        else:
            splits = self.state.get_list_state(self.SPLITS).get()
        self.reader: SourceReader = source.create_reader(
            splits, SourceReaderContext(ctx.job_name, self.uid, ctx.subtask, ctx.parallelism)
        )
        notify = getattr(self.reader, "notify_checkpoint_complete", None)
        self._notify = notify if callable(notify) else None
        splits_of_poll = getattr(self.reader, "last_poll_splits", None)
        self._splits_of_poll = splits_of_poll if callable(splits_of_poll) else None
        finished = getattr(self.reader, "finished_splits", None)
        self._finished = finished if callable(finished) else None
        self._taken: dict[int, list[dict]] = {}  # checkpoint id -> positions, until complete

    def poll(self, max_records: int) -> list[Any] | None:
        try:
            return self.reader.poll(max_records)
        except Exception as e:
            raise UserFunctionError(f"{self._where} failed to read: {type(e).__name__}: {e}") from e

    @property
    def tells_splits(self) -> bool:
        """Whether the reader says which split each record of a poll came from (then each
        split gets its own watermarks)."""
        return self._splits_of_poll is not None

    def last_poll_splits(self) -> list[tuple[str, int]] | None:
        """The splits of the records of the last poll, as runs of (split id, records); None
        where the reader does not tell."""
        return self._splits_of_poll() if self._splits_of_poll is not None else None

    def finished_splits(self) -> list[str]:
        """The splits read to their end since the last call (their watermarks stop counting)."""
        return self._finished() if self._finished is not None else []

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        splits = self.reader.snapshot()
        if self._union:
            self.state.get_union_list_state(self.SPLITS).update(splits)
        else:
            self.state.get_list_state(self.SPLITS).update(splits)
        if self._notify is not None:
            self._taken[checkpoint_id] = splits
        return OperatorSnapshot(self.state.snapshot(), None)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Tells a reader that wants to know (Kafka commits offsets to its group) which
        positions a completed checkpoint holds; older pending ones are subsumed."""
        done = [cid for cid in self._taken if cid <= checkpoint_id]
        if done and self._notify is not None:
            self._notify(checkpoint_id, self._taken[max(done)])
        for cid in done:
            del self._taken[cid]

    def close(self) -> None:
        self.reader.close()
