"""The operator that reads a source: the task side of the source framework
(``connectors/interfaces/source.py``). Its reader's split positions are its operator list
state (each split as the source's ``split_codec`` stores it), dealt out anew on a rescale;
split requests go to the enumerator, and its assignments come back, as operator events.

**Threading:** the task thread only.
"""

from __future__ import annotations

import logging
from typing import Any

from barrierflow.connectors.interfaces import source_events
from barrierflow.connectors.interfaces.source import (
    Source,
    SourceReader,
    SourceReaderContext,
    tells_splits,
)
from barrierflow.connectors.interfaces.source_reader import SplitRun
from barrierflow.connectors.interfaces.versioned_codec import decode_stored, encode_stored
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.source_backlog import SourceBacklog
from barrierflow.runtime.operators import (
    Operator,
    OperatorContext,
    OperatorSnapshot,
    UserFunctionError,
    restore_operator_state,
)
from barrierflow.state.operator_state import OperatorStateStore

log = logging.getLogger("barrierflow.task")


class SourceOperator(Operator):
    SPLITS = "splits"

    def open(self, ctx: OperatorContext) -> None:
        source: Source = self.spec.function
        self._where = f"source {self.uid!r} ({self.name}), subtask {ctx.subtask}"
        self._send_event = ctx.send_operator_event
        self._codec = source.split_codec()
        self.state = OperatorStateStore()
        if ctx.restore is not None:
            restore_operator_state(self.state, ctx)
        self._splits = self.state.get_list_state(self.SPLITS)
        self.reader: SourceReader = source.create_reader(
            SourceReaderContext(
                ctx.job_name, self.uid, ctx.subtask, ctx.parallelism, self._request_split
            )
        )
        try:
            restored = [decode_stored(self._codec, s) for s in self._splits.get()]
            if restored:
                self.reader.add_splits(restored)
            self.reader.start()
        except BaseException:
            self.reader.close()  # the task never lists an operator whose open failed
            raise
        self.tells_splits = tells_splits(self.reader)
        self._backlog_failed = False

    def _request_split(self) -> None:
        self._send_event(source_events.encode(source_events.SplitRequest()))

    def handle_operator_event(self, payload: bytes) -> None:
        """An assignment of the enumerator: more splits, or the news that none will come."""
        event = source_events.decode_to_reader(payload)
        if isinstance(event, source_events.AddSplits):
            self.reader.add_splits([decode_stored(self._codec, s) for s in event.splits])
        else:
            self.reader.notify_no_more_splits()

    def poll(self, max_records: int) -> list[Any] | None:
        try:
            return self.reader.poll(max_records)
        except Exception as e:
            raise UserFunctionError(f"{self._where} failed to read: {type(e).__name__}: {e}") from e

    def last_poll_splits(self) -> list[SplitRun] | None:
        """Which split each record of the last poll came from (None: the reader does not
        tell; its subtask has one watermark)."""
        return self.reader.split_runs() if self.tells_splits else None

    def backlog(self) -> SourceBacklog | None:
        """The reader's backlog; a reader that fails to tell it is taken as one that cannot
        (the job goes on, logged once)."""
        try:
            return self.reader.backlog()
        except Exception as e:  # noqa: BLE001 - a metric, never worth the job
            if not self._backlog_failed:
                log.warning("%s cannot tell its backlog: %s: %s", self._where, type(e).__name__, e)
                self._backlog_failed = True
            return None

    def finished_splits(self) -> list[str]:
        """The splits read to their end since the last call: their watermarks stop counting."""
        return self.reader.finished_splits()

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        splits = self.reader.snapshot_state(checkpoint_id)
        try:
            self._splits.update([encode_stored(self._codec, s) for s in splits])
        except TypeError as e:
            raise UserFunctionError(f"{self._where}: a split its reader holds: {e}") from None
        return OperatorSnapshot(self.state.snapshot(), None)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.reader.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        self.reader.close()
