"""The window operator's batch path: aligned (tumbling, sliding) event-time windows with a
``reduce`` or ``aggregate`` and nothing else, their accumulators kept by window end
(``windowing/aligned_windows.py``) and fired a window at a time, with the same output in the
same order as the general path (docs/adr/0021-aligned-window-batch-path.md).

Between snapshots the windows live outside keyed state; at a snapshot they go into it as whole
tables, or for a savepoint or a canonical snapshot in the general layout, and out again once
the backend froze them (``runtime/window_state.py``,
docs/adr/0024-window-tables-in-checkpoints.md).

**Threading:** the task thread only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from barrierflow.datastream.functions.one_input import AggregateFunction
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions, SnapshotFormat
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.operators.window_path import WindowParts
from barrierflow.runtime.window_state import (
    clear_keys,
    drop_window_tables,
    put_window_tables,
    read_accumulators,
    release_restored,
    write_accumulators,
)
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.windowing.aligned_windows import (
    AccumulateFailed,
    AlignedWindowAccumulators,
    AlignedWindows,
    Folding,
)
from barrierflow.windowing.window_spec import Contents, WindowSpec


class AlignedWindowPath:
    """The accumulators of every open window, by window end; ``open`` says whether the path
    applies."""

    def __init__(self, accumulators: AlignedWindowAccumulators, parts: WindowParts) -> None:
        self._accumulators = accumulators
        backend = parts.backend
        assert isinstance(backend, HeapKeyedStateBackend)  # opened with state on the heap only
        self._backend = backend
        self._timers = parts.timers
        self._failure = parts.failure
        self.late_records_dropped = 0

    @classmethod
    def open(
        cls, parts: WindowParts, state_on_heap: bool, restoring: bool
    ) -> AlignedWindowPath | None:
        """The path, where it applies: plain aligned windows (``WindowParts.plain``), no
        window function, state on the heap (RocksDB keeps window state off the heap, and the
        batch path would hold it all in memory), and restored state that it can take over
        (which it then empties: it keeps its windows itself). Otherwise None."""
        spec = parts.spec
        windows = AlignedWindows.of(spec.assigner)
        if (
            not parts.plain
            or windows is None
            or spec.window_function is not None
            or not state_on_heap
        ):
            return None
        assign, actx = spec.assigner.assign_windows, parts.assigner_context
        accumulators = AlignedWindowAccumulators(
            windows,
            parts.key_selector,
            _folding(spec),
            lambda record: assign(record, NO_TIMESTAMP, actx),  # raises the assigner's error
        )
        if restoring:
            entries = read_accumulators(parts.backend, windows)
            if entries is None:
                return None
            accumulators.restore(entries)
            assert isinstance(parts.backend, HeapKeyedStateBackend)  # state_on_heap
            release_restored(parts.backend)
            parts.timers.forget_event_time_timers()  # the accumulators fire these windows now
        return cls(accumulators, parts)

    def process(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        try:
            late = self._accumulators.add_batch(records, timestamps, self._timers.watermark)
        except AccumulateFailed as e:
            raise self._failure(e.record, e.__cause__, e.key) from e.__cause__
        self.late_records_dropped += late
        return EMPTY

    def advance_watermark(self, watermark: int) -> RecordBatch:
        self._timers.watermark = watermark
        try:
            return RecordBatch(*self._accumulators.fire(watermark))
        except AccumulateFailed as e:
            raise self._failure(e.record, e.__cause__, e.key) from e.__cause__

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        return None  # event-time windows: no processing-time timer

    @contextmanager
    def in_keyed_state(self, options: CheckpointOptions) -> Iterator[None]:
        if options.is_savepoint or options.snapshot_format is SnapshotFormat.CANONICAL:
            keys = write_accumulators(self._backend, self._accumulators)
            try:
                yield
            finally:
                clear_keys(self._backend, keys)
        else:
            names = put_window_tables(self._backend, self._accumulators)
            try:
                yield
            finally:
                drop_window_tables(self._backend, names)


def _folding(spec: WindowSpec) -> Folding:
    """The accumulators' first, add and result, with a reduce function called directly."""
    if spec.contents is Contents.REDUCE:
        reduce = getattr(spec.function, "reduce", spec.function)
        return Folding(_itself, reduce, _itself)
    agg: AggregateFunction = spec.function
    return Folding(
        lambda value: agg.add(value, agg.create_accumulator()),
        lambda acc, value: agg.add(value, acc),
        agg.get_result,
    )


def _itself(value: Any) -> Any:
    return value
