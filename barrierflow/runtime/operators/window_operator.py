"""The window operator (Flink's ``WindowOperator``): keyed windows built on keyed state and
timers, so that windows checkpoint, rescale and restore like all keyed state, in both backends.

Per key, the state holds the contents of each open window (``CONTENTS``: window -> accumulator;
or ``ELEMENTS``: (window, element) pairs where the function needs every element), the trigger's
own per-window state, and the timers (namespace: the window). A record goes into the windows
its assigner gives; session windows that come to overlap are merged, contents and timers alike.
The trigger decides on each record and on each timer whether the window fires (its function is
called, the outputs carry the window's last moment as their timestamp) and whether it is
purged. An event-time window is dropped once the watermark passes its end plus the allowed
lateness (its cleanup timer); a record that only belongs to dropped windows is late and dropped
(counted in ``late_records_dropped``, served as ``numLateRecordsDropped`` at ``/metrics``).

The most common case, event-time tumbling or sliding windows with a ``reduce`` or ``aggregate``
and nothing else (the default trigger, no window function, evictor, allowed lateness or late
side output), on a backend that keeps state on the heap, takes a batch path: the accumulators
by window end (``windowing/aligned_windows.py``), handed to the backend whole at each checkpoint
and written in the general layout for savepoints (``window_state.py``), with the same output in
the same order (docs/adr/0021-aligned-window-batch-path.md,
docs/adr/0024-window-tables-in-checkpoints.md).

Processing-time windows fire on the wall clock; at the end of a bounded input the ones still
open are not fired (as in Flink), event-time windows all fire (the end of input is the end of
time).

**Threading:** the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from barrierflow.datastream.functions.one_input import (
    AggregateFunction,
    Function,
    ProcessWindowFunction,
)
from barrierflow.datastream.output_tag import SideOutput
from barrierflow.eventtime.timestamps import NO_TIMESTAMP
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions, SnapshotFormat
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.operators.keyed import KeyedOperator
from barrierflow.runtime.operators.stream_operator import OperatorContext, OperatorSnapshot
from barrierflow.runtime.timer_service import EVENT_TIME, PROCESSING_TIME, InternalTimerService
from barrierflow.runtime.window_state import (
    CONTENTS,
    ELEMENTS,
    TRIGGER_STATE,
    clear_keys,
    drop_window_tables,
    put_window_tables,
    read_accumulators,
    release_restored,
    window_tables_into_contents,
    write_accumulators,
)
from barrierflow.state.backends.registry import backend_kind
from barrierflow.windowing.aligned_windows import (
    AccumulateFailed,
    AlignedWindowAccumulators,
    AlignedWindows,
    Folding,
)
from barrierflow.windowing.assigners import AssignerContext, MergingWindowAssigner
from barrierflow.windowing.triggers import EventTimeTrigger, Trigger, TriggerResult
from barrierflow.windowing.window_spec import Contents, WindowSpec


class _WindowValueState:
    """A trigger's ValueState for one window of the current key."""

    __slots__ = ("_entry", "_map")

    def __init__(self, state_map: Any, entry: tuple[str, Any]) -> None:
        self._map, self._entry = state_map, entry

    def value(self) -> Any:
        return self._map.get(self._entry)

    def update(self, value: Any) -> None:
        if value is None:
            self.clear()
        else:
            self._map.put(self._entry, value)

    def clear(self) -> None:
        self._map.remove(self._entry)


class _TriggerContext:
    """What a trigger sees: timers and state of the window it is asked about."""

    def __init__(self, op: WindowOperator) -> None:
        self._op = op
        self._timers = op.timers
        self.window: Any = None
        self.merged_windows: Any = ()  # in on_merge: the windows merged into ``window``

    def get_current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000

    def get_current_watermark(self) -> int:
        return self._timers.watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._timers.register(PROCESSING_TIME, time, self.window)

    def register_event_time_timer(self, time: int) -> None:
        self._timers.register(EVENT_TIME, time, self.window)

    def delete_processing_time_timer(self, time: int) -> None:
        self._timers.delete(PROCESSING_TIME, time, self.window)

    def delete_event_time_timer(self, time: int) -> None:
        self._timers.delete(EVENT_TIME, time, self.window)

    def get_partitioned_state(self, state_descriptor: Any) -> _WindowValueState:
        self._op.trigger_state_names.add(state_descriptor.name)
        return _WindowValueState(self._op.trigger_state, (state_descriptor.name, self.window))

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        """In ``on_merge``: the state of the windows being merged, reduced into the merged
        window's with the descriptor's reduce function (a ``ReducingStateDescriptor``)."""
        reduce = getattr(state_descriptor, "reduce_function", None)
        if reduce is None:
            raise TypeError(
                f"trigger state {state_descriptor.name!r} cannot be merged: only a "
                "ReducingStateDescriptor's state merges (its reduce function combines the "
                "merged windows' values); declare the trigger's state with one"
            )
        reduce = getattr(reduce, "reduce", reduce)
        self._op.trigger_state_names.add(state_descriptor.name)
        state = self._op.trigger_state
        values = [
            v
            for w in (self.window, *self.merged_windows)
            if (v := state.get((state_descriptor.name, w))) is not None
        ]
        if values:
            merged = values[0]
            for value in values[1:]:
                merged = reduce(merged, value)
            state.put((state_descriptor.name, self.window), merged)


class _ProcessWindowContext:
    __slots__ = ("_timers", "_window")

    def __init__(self, timers: InternalTimerService, window: Any) -> None:
        self._timers, self._window = timers, window

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return time.time_ns() // 1_000_000

    def current_watermark(self) -> int:
        return self._timers.watermark


def _call(fn: Any, method: str) -> Any:
    return getattr(fn, method) if hasattr(fn, method) else fn


class _MergeCollector:
    """The callback given to ``merge_windows``: collects each group and its result."""

    def __init__(self, merges: list[tuple[list[Any], Any]]) -> None:
        self._merges = merges

    def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
        self._merges.append((list(to_be_merged), merge_result))


class WindowOperator(KeyedOperator):
    def open(self, ctx: OperatorContext) -> None:
        self.open_keyed(ctx)
        spec: WindowSpec = self.spec.function
        self._window_spec = spec
        self._assigner = spec.assigner
        self._event_time = spec.assigner.is_event_time()  # a method, as PyFlink's
        self._merging = isinstance(spec.assigner, MergingWindowAssigner)
        self._trigger: Trigger = spec.trigger
        if self._merging and not self._trigger.can_merge():
            raise ValueError(
                f"{self._where}: the trigger {type(self._trigger).__name__} cannot merge "
                f"windows, which {type(spec.assigner).__name__} needs"
            )
        self._key_context = self.backend.key_context
        if ctx.metrics is not None:  # as Flink's window operator names it
            ctx.metrics.group(self.name).gauge(
                "numLateRecordsDropped", lambda: self.late_records_dropped
            )
        self._buffers = spec.buffers_elements
        self.contents = self.backend.get_state(CONTENTS)
        self.elements = self.backend.get_state(ELEMENTS)
        self.trigger_state = self.backend.get_state(TRIGGER_STATE)
        self.trigger_state_names: set[str] = set()
        self._tctx = _TriggerContext(self)
        self.late_records_dropped = 0
        self._lateness = spec.allowed_lateness_ms if self._event_time else 0
        late_tag = spec.late_data_tag
        self._late_tag = late_tag if late_tag in self.spec.side_outputs else None
        self._simple = (
            self._late_tag is None
            and self._event_time
            and not self._merging
            and type(self._trigger) is EventTimeTrigger
            and not self._buffers
            and not self._lateness
        )
        runtime = self.runtime_context(ctx)
        self._assigner_ctx = AssignerContext(0, runtime)  # its keyed state: the current key's
        for fn in (spec.function, spec.window_function):
            if isinstance(fn, Function):
                fn.open(runtime)
        if spec.contents is Contents.REDUCE:
            reduce = _call(spec.function, "reduce")
            self._add = lambda acc, value: value if acc is None else reduce(acc, value)
            self._merge = reduce
            self._result = lambda acc: acc
        elif spec.contents is Contents.AGGREGATE:
            agg: AggregateFunction = spec.function
            self._add = lambda acc, value: agg.add(
                value, agg.create_accumulator() if acc is None else acc
            )
            self._merge = agg.merge
            self._result = agg.get_result
        self._aligned = self._aligned_path(ctx) if self._simple else None
        if self._aligned is None and ctx.restore is not None:
            window_tables_into_contents(self.backend, self.timers)

    def _aligned_path(self, ctx: OperatorContext) -> AlignedWindowAccumulators | None:
        """The batch path's accumulators, where it applies: aligned windows, no window
        function, state on the heap (RocksDB keeps window state off the heap, and the batch
        path would hold it all in memory), and restored state that it can take over."""
        windows = AlignedWindows.of(self._assigner)
        if (
            windows is None
            or self._window_spec.window_function is not None
            or not backend_kind(ctx.state_backend.kind).state_on_heap
        ):
            return None
        assign, actx = self._assigner.assign_windows, self._assigner_ctx
        accumulators = AlignedWindowAccumulators(
            windows,
            self.spec.key_selector,
            self._folding(),
            lambda record: assign(record, NO_TIMESTAMP, actx),  # raises the assigner's error
        )
        if ctx.restore is not None:
            entries = read_accumulators(self.backend, windows)
            if entries is None:
                return None
            accumulators.restore(entries)
            release_restored(self.backend)
            self.timers.forget_event_time_timers()  # the accumulators fire these windows now
        return accumulators

    # --- records ----------------------------------------------------------------------------

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        records = batch.values
        timestamps = batch.timestamps
        if timestamps is None:  # processing-time windows of a stream without event time
            timestamps = [NO_TIMESTAMP] * len(records)
        if self._aligned is not None:
            return self._process_aligned(records, timestamps)
        if self._simple:
            return self._process_simple(records, timestamps)
        select = self.spec.key_selector
        assign = self._assigner.assign_windows
        merging = self._merging
        key_context = self._key_context
        actx = self._assigner_ctx
        actx.processing_time_ms = time.time_ns() // 1_000_000
        out: list[Any] = []
        out_ts: list[int] = []
        record = None
        try:
            for record, timestamp in zip(records, timestamps, strict=True):
                key_context.key = select(record)
                windows = assign(record, timestamp, actx)
                if merging:
                    windows = [self._merge_windows(window) for window in windows]
                accepted = False
                for window in windows:
                    if self._is_late(window):
                        continue
                    accepted = True
                    self._add_element(window, record)
                    self._tctx.window = window
                    result = self._trigger.on_element(record, timestamp, window, self._tctx)
                    self._on_result(result, window, out, out_ts)
                    self._register_cleanup(window)
                if not accepted:
                    if self._late_tag is None:
                        self.late_records_dropped += 1
                    else:
                        out.append(SideOutput(self._late_tag, record))
                        out_ts.append(timestamp)
        except Exception as e:
            raise self.failure(record, e, key_context.key) from e
        return RecordBatch(out, out_ts)

    def _folding(self) -> Folding:
        """The batch path's ``_add`` and ``_result``, with a reduce function called directly."""
        spec = self._window_spec
        if spec.contents is Contents.REDUCE:
            return Folding(_itself, _call(spec.function, "reduce"), _itself)
        agg: AggregateFunction = spec.function
        return Folding(
            lambda value: agg.add(value, agg.create_accumulator()),
            lambda acc, value: agg.add(value, acc),
            agg.get_result,
        )

    def _process_aligned(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        try:
            late = self._aligned.add_batch(records, timestamps, self.timers.watermark)
        except AccumulateFailed as e:
            raise self.failure(e.record, e.__cause__, e.key) from e.__cause__
        self.late_records_dropped += late
        return EMPTY

    def _process_simple(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        """The batch path's case where it does not apply (a window function, sessions, a
        custom assigner, state off the heap), inlined: event-time windows that do not merge,
        the default trigger, one accumulator per window, no allowed lateness. Nothing fires
        here (a window whose end the watermark passed is late, and skipped), and a window's
        timer is registered when the key's window opens, not again for every record."""
        select = self.spec.key_selector
        assign = self._assigner.assign_windows
        key_context = self._key_context
        get, put, add = self.contents.get, self.contents.put, self._add
        register = self.timers.register
        watermark = self.timers.watermark
        actx = self._assigner_ctx
        record = None
        try:
            for record, timestamp in zip(records, timestamps, strict=True):
                key_context.key = select(record)
                accepted = False
                for window in assign(record, timestamp, actx):
                    end = window.end - 1
                    if end <= watermark:
                        continue
                    accepted = True
                    acc = get(window)
                    put(window, add(acc, record))
                    if acc is None:
                        register(EVENT_TIME, end, window)
                if not accepted:
                    self.late_records_dropped += 1
        except Exception as e:
            raise self.failure(record, e, key_context.key) from e
        return EMPTY

    def _is_late(self, window: Any) -> bool:
        return self._event_time and self._cleanup_time(window) <= self.timers.watermark

    def _cleanup_time(self, window: Any) -> int:
        end = window.max_timestamp()
        if not self._event_time:
            return end
        return min(end + self._lateness, MAX_WATERMARK)

    def _register_cleanup(self, window: Any) -> None:
        cleanup = self._cleanup_time(window)
        if cleanup < MAX_WATERMARK:
            domain = EVENT_TIME if self._event_time else PROCESSING_TIME
            self.timers.register(domain, cleanup, window)

    def _add_element(self, window: Any, record: Any) -> None:
        if self._buffers:
            self.elements.add((window, record))
        else:
            contents = self.contents
            contents.put(window, self._add(contents.get(window), record))

    # --- session windows ----------------------------------------------------------------------

    def _windows_of_key(self) -> list[Any]:
        if self._buffers:
            return list(dict.fromkeys(w for w, _ in self.elements.get()))
        return list(self.contents.keys())

    def _merge_windows(self, new: Any) -> Any:
        """Asks the merging assigner which of the key's windows merge once ``new`` joins them,
        merges each group (contents, trigger state, timers), and returns the window ``new``
        is now part of."""
        existing = self._windows_of_key()
        if new in existing:
            return new
        merges: list[tuple[list[Any], Any]] = []
        self._assigner.merge_windows([*existing, new], _MergeCollector(merges))
        target = new
        for members, merged in merges:
            if new in members:
                target = merged
            self._merge_into(merged, [w for w in members if w != new])
        return target

    def _merge_into(self, merged: Any, overlapping: list[Any]) -> None:
        """The key's windows ``overlapping`` become ``merged``: contents first, then the
        trigger's ``on_merge`` (which may merge its state of ``overlapping`` into
        ``merged``), then the old windows' trigger state and cleanup timers go, as in Flink."""
        if not overlapping or overlapping == [merged]:
            return
        if self._buffers:
            old = set(overlapping)
            self.elements.update([(merged if w in old else w, e) for w, e in self.elements.get()])
        else:
            accumulators = [self.contents.get(w) for w in overlapping]
            for w in overlapping:
                self.contents.remove(w)
            combined = accumulators[0]
            for acc in accumulators[1:]:
                combined = self._merge(combined, acc)
            self.contents.put(merged, combined)
        tctx = self._tctx
        tctx.window, tctx.merged_windows = merged, overlapping
        self._trigger.on_merge(merged, tctx)
        tctx.merged_windows = ()
        for w in overlapping:
            if w == merged:
                continue  # it lives on: its trigger state and timers are the merged window's
            tctx.window = w
            self._trigger.clear(w, tctx)
            for name in self.trigger_state_names:
                self.trigger_state.remove((name, w))
            self._delete_cleanup(w)
        self._register_cleanup(merged)

    def _delete_cleanup(self, window: Any) -> None:
        domain = EVENT_TIME if self._event_time else PROCESSING_TIME
        self.timers.delete(domain, self._cleanup_time(window), window)

    # --- firing -------------------------------------------------------------------------------

    def _on_result(self, result: TriggerResult, window: Any, out: list, out_ts: list) -> None:
        if result.is_fire():
            emitted = self._emit(window)
            out.extend(emitted)
            out_ts.extend([window.max_timestamp()] * len(emitted))
        if result.is_purge():
            self._clear_contents(window)

    def _emit(self, window: Any) -> list[Any]:
        spec = self._window_spec
        if self._buffers:
            pairs = self.elements.get()
            inputs = [e for w, e in pairs if w == window]
            if spec.evictor is not None and len(inputs) > spec.evictor.max_count:
                inputs = spec.evictor.evict(inputs)
                rest = [(w, e) for w, e in pairs if w != window]
                self.elements.update(rest + [(window, e) for e in inputs])
            if not inputs:
                return []
            if spec.contents is not Contents.ELEMENTS:
                acc = None
                for e in inputs:
                    acc = self._add(acc, e)
                inputs = [self._result(acc)]
        else:
            acc = self.contents.get(window)
            if acc is None:
                return []
            inputs = [self._result(acc)]
        fn = spec.window_function
        if fn is None:
            return inputs
        key = self._key_context.key
        if isinstance(fn, ProcessWindowFunction) or hasattr(fn, "process"):
            result = fn.process(key, _ProcessWindowContext(self.timers, window), inputs)
        else:
            result = _call(fn, "apply")(key, window, inputs)
        return _as_list(result)

    def _clear_contents(self, window: Any) -> None:
        if self._buffers:
            pairs = self.elements.get()
            self.elements.update([(w, e) for w, e in pairs if w != window])
        else:
            self.contents.remove(window)

    def _clear_all(self, window: Any) -> None:
        self._clear_contents(window)
        tctx = self._tctx
        tctx.window = window
        self._trigger.clear(window, tctx)
        for name in self.trigger_state_names:
            self.trigger_state.remove((name, window))
        fn = self._window_spec.window_function
        if isinstance(fn, ProcessWindowFunction):
            fn.clear(_ProcessWindowContext(self.timers, window))

    def on_watermark(self, watermark: int) -> RecordBatch | None:
        if watermark <= self.timers.watermark:
            return None
        if self._aligned is not None:
            self.timers.watermark = watermark
            try:
                return RecordBatch(*self._aligned.fire(watermark))
            except AccumulateFailed as e:
                raise self.failure(e.record, e.__cause__, e.key) from e.__cause__
        return self._on_timers(self.timers.advance_watermark(watermark), event_time=True)

    def on_processing_time(self, now_ms: int) -> RecordBatch | None:
        due = self.timers.next_processing_time()
        if due is None or due > now_ms:
            return None
        return self._on_timers(self.timers.fire_processing_time(now_ms), event_time=False)

    def _on_timers(self, timers: Iterable[Any], event_time: bool) -> RecordBatch:
        out: list[Any] = []
        out_ts: list[int] = []
        tctx, trigger = self._tctx, self._trigger
        timer = None
        try:
            for timer in timers:
                window = timer.namespace
                tctx.window = window
                if event_time:
                    result = trigger.on_event_time(timer.timestamp, window, tctx)
                else:
                    result = trigger.on_processing_time(timer.timestamp, window, tctx)
                self._on_result(result, window, out, out_ts)
                if event_time == self._event_time and (
                    timer.timestamp == self._cleanup_time(window)
                ):
                    self._clear_all(window)
        except Exception as e:
            raise self.failure(
                f"<timer at {timer.timestamp} of window {timer.namespace}>", e, timer.key
            ) from e
        return RecordBatch(out, out_ts)

    def snapshot_state(self, checkpoint_id: int, options: CheckpointOptions) -> OperatorSnapshot:
        """The batch path's windows go into the snapshot as whole tables, or for a savepoint or
        a canonical snapshot in the general layout, and out of the keyed state again once the
        backend froze them (``window_state.py``)."""
        if self._aligned is None:
            return super().snapshot_state(checkpoint_id, options)
        if options.is_savepoint or options.snapshot_format is SnapshotFormat.CANONICAL:
            keys = write_accumulators(self.backend, self._aligned)
            try:
                return super().snapshot_state(checkpoint_id, options)
            finally:
                clear_keys(self.backend, keys)
        names = put_window_tables(self.backend, self._aligned)
        try:
            return super().snapshot_state(checkpoint_id, options)
        finally:
            drop_window_tables(self.backend, names)

    def close(self) -> None:
        for fn in (self._window_spec.function, self._window_spec.window_function):
            if isinstance(fn, Function):
                fn.close()
        super().close()


def _itself(value: Any) -> Any:
    return value


def _as_list(result: Any) -> list[Any]:
    return [] if result is None else list(result)
