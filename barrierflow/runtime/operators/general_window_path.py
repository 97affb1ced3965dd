"""The window operator's general path (Flink's ``WindowOperator``): windows kept in keyed state
and timers, record by record, for any assigner, trigger, window function, evictor, allowed
lateness or late side output, on any backend.

Per key, the state holds the contents of each open window (``CONTENTS``: window -> accumulator;
or ``ELEMENTS``: (window, element) pairs where the function needs every element), the trigger's
own per-window state, and the timers (namespace: the window). A record goes into the windows
its assigner gives; session windows that come to overlap are merged, contents and timers alike.
The trigger decides on each record and on each timer whether the window fires (its function is
called, the outputs carry the window's last moment as their timestamp) and whether it is
purged. An event-time window is dropped once the watermark passes its end plus the allowed
lateness (its cleanup timer); a record that only belongs to dropped windows is late and dropped
(counted), or sent to the late data's side output.

**Threading:** the task thread only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from barrierflow.datastream.functions.one_input import AggregateFunction, ProcessWindowFunction
from barrierflow.datastream.output_tag import SideOutput
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.protocol.checkpoint_barrier import CheckpointOptions
from barrierflow.protocol.record_batch import EMPTY, RecordBatch
from barrierflow.runtime.operators.window_path import WindowParts
from barrierflow.runtime.timer_service import EVENT_TIME, PROCESSING_TIME, InternalTimerService
from barrierflow.runtime.window_state import window_tables_into_contents
from barrierflow.state.key_groups import as_key, unwrapped
from barrierflow.windowing.window_assigners import MergingWindowAssigner
from barrierflow.windowing.window_spec import Contents
from barrierflow.windowing.window_triggers import Trigger, TriggerResult


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

    def __init__(self, path: GeneralWindowPath) -> None:
        self._path = path
        self._timers = path.timers
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
        self._path.trigger_state_names.add(state_descriptor.name)
        return _WindowValueState(self._path.trigger_state, (state_descriptor.name, self.window))

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
        self._path.trigger_state_names.add(state_descriptor.name)
        state = self._path.trigger_state
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


class _MergeCollector(MergingWindowAssigner.MergeCallback[Any]):
    """The callback given to ``merge_windows``: collects each group and its result."""

    def __init__(self, merges: list[tuple[list[Any], Any]]) -> None:
        self._merges = merges

    def merge(self, to_be_merged: Iterable[Any], merge_result: Any) -> None:
        self._merges.append((list(to_be_merged), merge_result))


class GeneralWindowPath:
    """Windows in keyed state and timers; ``contents``, ``elements`` and ``trigger_state``: the
    window layout's states, which the operator declared."""

    def __init__(
        self, parts: WindowParts, contents: Any, elements: Any, trigger_state: Any, restoring: bool
    ) -> None:
        """``restoring``: windows the batch path checkpointed as whole tables move into the
        general layout first."""
        spec = parts.spec
        self._window_spec = spec
        self._assigner = spec.assigner
        self._event_time = spec.assigner.is_event_time()  # a method, as PyFlink's
        self._merging = isinstance(spec.assigner, MergingWindowAssigner)
        self._trigger: Trigger = spec.trigger
        self._select = unwrapped(parts.key_selector)
        self._key_context = parts.backend.key_context
        self._assigner_ctx = parts.assigner_context
        self._failure = parts.failure
        self.timers = parts.timers
        self._buffers = spec.buffers_elements
        self.contents = contents
        self.elements = elements
        self.trigger_state = trigger_state
        self.trigger_state_names: set[str] = set()
        self._tctx = _TriggerContext(self)
        self.late_records_dropped = 0
        self._lateness = spec.allowed_lateness_ms if self._event_time else 0
        self._late_tag = parts.late_tag
        self._plain = parts.plain
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
        if restoring:
            window_tables_into_contents(parts.backend, parts.timers)

    # --- records ----------------------------------------------------------------------------

    def process(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        if self._plain:
            return self._process_plain(records, timestamps)
        select = self._select
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
                key = select(record)  # a list is made a key here (``unwrapped``)
                key_context.key = key if key.__class__ is not list else as_key(key)
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
            raise self._failure(record, e, key_context.key) from e
        return RecordBatch(out, out_ts)

    def _process_plain(self, records: list[Any], timestamps: list[int]) -> RecordBatch:
        """The batch path's case where it does not apply (a window function, a custom
        assigner, state off the heap), inlined: event-time windows that do not merge, the
        default trigger, one accumulator per window, no allowed lateness. Nothing fires here
        (a window whose end the watermark passed is late, and skipped), and a window's timer
        is registered when the key's window opens, not again for every record."""
        select = self._select
        assign = self._assigner.assign_windows
        key_context = self._key_context
        get, put, add = self.contents.get, self.contents.put, self._add
        register = self.timers.register
        watermark = self.timers.watermark
        actx = self._assigner_ctx
        record = None
        try:
            for record, timestamp in zip(records, timestamps, strict=True):
                key = select(record)  # a list is made a key here (``unwrapped``)
                key_context.key = key if key.__class__ is not list else as_key(key)
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
            raise self._failure(record, e, key_context.key) from e
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
        assert isinstance(self._assigner, MergingWindowAssigner)  # asked when _merging
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

    def advance_watermark(self, watermark: int) -> RecordBatch:
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
        # A failure of the timer service itself (its state) is not the window's: only what
        # runs for a timer is wrapped, naming that timer.
        for timer in timers:
            try:
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
                raise self._failure(
                    f"<timer at {timer.timestamp} of window {timer.namespace}>", e, timer.key
                ) from e
        return RecordBatch(out, out_ts)

    @contextmanager
    def in_keyed_state(self, options: CheckpointOptions) -> Iterator[None]:
        yield  # the windows are in keyed state all along


def _call(fn: Any, method: str) -> Any:
    return getattr(fn, method) if hasattr(fn, method) else fn


def _as_list(result: Any) -> list[Any]:
    return [] if result is None else list(result)
