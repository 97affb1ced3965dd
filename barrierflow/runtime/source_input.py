"""The input of a task whose chain starts with a source: it polls the ``SourceOperator`` for a
batch and runs it through the rest of the chain, as a network input runs a buffer.

Where the source says which split each record came from, and a timestamp assigner follows it,
the assigner is handed each batch's split runs (per-split watermarks) and the splits read to
their end (they stop holding the watermark back). A suspend savepoint (stop) pauses the
polling until it completes or is aborted.

**Threading:** the task thread only. **I/O:** what the source's reader does.
"""

from __future__ import annotations

from collections.abc import Callable

from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.input_processor import DataInputStatus, InputKind
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.source_operator import SourceOperator
from barrierflow.runtime.task_metrics import TaskIOMetrics

POLL_INTERVAL_MS = 10  # how long a task waits after a poll that found nothing


class SourceInput:
    kind = InputKind.SOURCE
    poll_interval_ms = POLL_INTERVAL_MS
    is_finished = True  # no upstream task to wait for
    final_snapshot_follows = False  # EndInput says so itself

    def __init__(
        self,
        source: SourceOperator,
        chain: OperatorChain,
        metrics: TaskIOMetrics,
        buffer_size: int,
        paused: Callable[[], bool],
    ) -> None:
        """``paused``: whether a suspend savepoint was taken and is still pending."""
        self._source = source
        self._chain = chain
        self._metrics = metrics
        self._buffer_size = buffer_size
        self._paused = paused
        assigner = chain.split_watermarks()
        self._split_assigner = assigner if source.tells_splits else None
        self.ended = False

    def end_input(self) -> None:
        """Read nothing more (stop --drain, or the source's end)."""
        self.ended = True

    def process_input(self) -> DataInputStatus:
        if self.ended:
            return DataInputStatus.END_OF_INPUT
        if self._paused():
            return DataInputStatus.NOTHING_AVAILABLE
        source = self._source
        values = source.poll(self._buffer_size)
        if values is None:
            self.ended = True
            status = DataInputStatus.END_OF_DATA
        elif values:
            self._metrics.took_in(len(values))
            if self._split_assigner is not None:
                self._split_assigner.split_runs = source.last_poll_splits()
            self._chain.process(RecordBatch(values))
            status = DataInputStatus.MORE_AVAILABLE
        else:
            status = DataInputStatus.NOTHING_AVAILABLE
        if self._split_assigner is not None and values is not None:
            self._split_assigner.release_splits(source.finished_splits())
        return status

    def process_priority_events(self) -> bool:
        return False  # no input channels: no barrier to overtake with

    def on_time(self, now_ns: int) -> None:
        pass

    # What the checkpoint coordinator may ask of an input: a source has no channel to block
    # or barrier to overtake, and runs each batch whole, between two mails.

    def block_channel(self, channel: int) -> None:
        pass

    def unblock_all_channels(self) -> None:
        pass

    def overtake_barriers(self, checkpoint_id: int) -> None:
        pass

    def unprocessed_input(self) -> tuple[int, RecordBatch] | None:
        return None
