"""The input of a task whose chain starts with a source: it polls the ``SourceOperator`` for a
batch and runs it through the rest of the chain, as a network input runs a buffer.

Where the source says which split each record came from, and the operator after it keeps a
watermark per split (``OperatorChain.watermarks_per_split``), each batch carries what the
reader told of the poll (``RecordBatch.splits``: the split runs of its records, the splits read
to their end), and a poll that found no records but ended splits hands the chain an empty batch
that says so; otherwise a batch carries the records alone, and the reader is not asked
(docs/adr/0025-split-provenance-in-the-batch.md). A suspend savepoint (stop) pauses the polling
until it completes or is aborted.

**Threading:** the task thread only. **I/O:** what the source's reader does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from barrierflow.protocol.record_batch import RecordBatch, SourceSplits
from barrierflow.runtime.input_processor import DataInputStatus, InputKind
from barrierflow.runtime.operator_chain import OperatorChain
from barrierflow.runtime.source_operator import SourceOperator
from barrierflow.runtime.task_metrics import TaskIOMetrics

POLL_INTERVAL_MS = 10  # how long a task waits after a poll that found nothing
BACKLOG_EVERY_S = 1.0  # how often the reader's backlog is asked for the metrics


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
        debloated: bool = False,
    ) -> None:
        """``paused``: whether a suspend savepoint was taken and is still pending;
        ``debloated``: buffer debloating is on, and a poll takes no more records than the
        smallest buffer a consumer asked for (``OperatorChain.smallest_buffer_size``)."""
        self._source = source
        self._chain = chain
        self._metrics = metrics
        self._buffer_size = buffer_size
        self._debloated = debloated
        self._paused = paused
        self._tells_splits = source.tells_splits and chain.watermarks_per_split
        self.ended = False
        self._next_backlog = 0.0

    def end_input(self) -> None:
        """Read nothing more (stop --drain, or the source's end)."""
        self.ended = True

    def process_input(self) -> DataInputStatus:
        if self.ended:
            return DataInputStatus.END_OF_INPUT
        if self._paused():
            return DataInputStatus.NOTHING_AVAILABLE
        source = self._source
        now = time.monotonic()
        if now >= self._next_backlog:  # on this thread: a reader is not thread-safe
            self._next_backlog = now + BACKLOG_EVERY_S
            self._metrics.backlog = source.backlog()
        if self._debloated:  # the sizes the consumers announced, before the poll they bound
            self._chain.receive_credits()
            limit = self._chain.smallest_buffer_size()
        else:
            limit = self._buffer_size
        values = source.poll(limit)
        if values is None:
            self.ended = True
            return DataInputStatus.END_OF_DATA
        if values:
            self._metrics.took_in(len(values))
            if self._tells_splits:
                runs = source.last_poll_splits()
                assert runs is not None  # a reader that tells_splits
                splits = SourceSplits(runs, source.finished_splits())
                self._chain.process(RecordBatch(values, None, splits))
            else:
                self._chain.process(RecordBatch(values))
            return DataInputStatus.MORE_AVAILABLE
        if self._tells_splits:
            ended = source.finished_splits()
            if ended:
                self._chain.process(RecordBatch([], None, SourceSplits([], ended)))
        return DataInputStatus.NOTHING_AVAILABLE

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
