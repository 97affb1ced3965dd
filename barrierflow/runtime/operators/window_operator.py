"""The window operator (Flink's ``WindowOperator``): keyed windows built on keyed state and
timers, so that windows checkpoint, rescale and restore like all keyed state, in both backends.

It opens the window's functions and keyed state, then chooses, once, the path that keeps and
fires its windows (``window_path.py``): the batch path where it applies (aligned event-time
windows with a ``reduce`` or ``aggregate`` and nothing else, state on the heap, restored state
it can take over; ``aligned_window_path.py``), the general path otherwise
(``general_window_path.py``). Records, watermarks, processing time and snapshots go to that
path; a record that only belongs to windows already dropped is late, counted in
``late_records_dropped`` (served as ``numLateRecordsDropped`` at ``/metrics``).

Processing-time windows fire on the wall clock; at the end of a bounded input the ones still
open are not fired (as in Flink), event-time windows all fire (the end of input is the end of
time).

**Threading:** the task thread only. **Lifecycle:** ``open`` (keyed state restored, functions
opened, the path chosen) -> batches, watermarks, timers, snapshots -> ``close``.
"""

from __future__ import annotations

from barrierflow.datastream.functions.one_input import Function
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators.aligned_window_path import AlignedWindowPath
from barrierflow.runtime.operators.general_window_path import GeneralWindowPath
from barrierflow.runtime.operators.keyed import KeyedOperator
from barrierflow.runtime.operators.stream_operator import OperatorContext, OperatorSnapshot
from barrierflow.runtime.operators.window_path import WindowParts, WindowPath
from barrierflow.runtime.window_state import CONTENTS, ELEMENTS, TRIGGER_STATE
from barrierflow.state.backends.registry import backend_kind
from barrierflow.windowing.window_assigners import AssignerContext, MergingWindowAssigner
from barrierflow.windowing.window_spec import WindowSpec


class WindowOperator(KeyedOperator):
    def open(self, ctx: OperatorContext) -> None:
        self.open_keyed(ctx)
        spec: WindowSpec = self.spec.function
        self._window_spec = spec
        if isinstance(spec.assigner, MergingWindowAssigner) and not spec.trigger.can_merge():
            raise ValueError(
                f"{self._where}: the trigger {type(spec.trigger).__name__} cannot merge "
                f"windows, which {type(spec.assigner).__name__} needs"
            )
        # The window layout's states, declared whichever path runs, so that the snapshots of
        # both declare the same.
        self.contents = self.backend.get_state(CONTENTS)
        self.elements = self.backend.get_state(ELEMENTS)
        self.trigger_state = self.backend.get_state(TRIGGER_STATE)
        runtime = self.runtime_context(ctx)
        for fn in (spec.function, spec.window_function):
            if isinstance(fn, Function):
                fn.open(runtime)
        late_tag = spec.late_data_tag
        select = self.checked_key_selector()
        parts = WindowParts(
            spec,
            select,
            self.backend,
            self.timers,
            AssignerContext(0, runtime),  # its keyed state: the current key's
            self.failure,
            late_tag if late_tag in self.spec.side_outputs else None,
        )
        restoring = ctx.restore is not None
        on_heap = backend_kind(ctx.state_backend.kind).state_on_heap
        self._path: WindowPath = AlignedWindowPath.open(
            parts, on_heap, restoring
        ) or GeneralWindowPath(parts, self.contents, self.elements, self.trigger_state, restoring)
        if ctx.metrics is not None:  # as Flink's window operator names it
            ctx.metrics.group(self.name).gauge(
                "numLateRecordsDropped", lambda: self.late_records_dropped
            )

    @property
    def late_records_dropped(self) -> int:
        return self._path.late_records_dropped

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        records = batch.values
        timestamps = batch.timestamps
        if timestamps is None:  # processing-time windows of a stream without event time
            timestamps = [NO_TIMESTAMP] * len(records)
        return self._path.process(records, timestamps)

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        if watermark <= self.timers.watermark:
            return None
        return self._path.advance_watermark(watermark)

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        return self._path.on_processing_time(now_ms)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        """The keyed backend's snapshot, with what the path keeps outside keyed state in it
        for the synchronous phase."""
        with self._path.in_keyed_state(options):
            return super().snapshot_state(checkpoint_id, options)

    def close(self) -> None:
        for fn in (self._window_spec.function, self._window_spec.window_function):
            if isinstance(fn, Function):
                fn.close()
        super().close()
