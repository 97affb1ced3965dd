"""The window operator alone (no Spark, no network), against results computed in the test:
tumbling, sliding and session windows with reduce, aggregate, process and apply; count windows;
allowed lateness; processing-time windows; and windows and their timers restored at another
parallelism, in both backends."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrierflow.checkpoint.restore import OperatorRestore
from barrierflow.datastream.functions.one_input import AggregateFunction, ProcessWindowFunction
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.state.backends import StateBackendConfig
from barrierflow.state.key_groups import KeyGroupCache
from barrierflow.testing.harness import OperatorHarness, operator
from barrierflow.windowing.window_assigners import (
    AssignerContext,
    EventTimeSessionWindows,
    MergingWindowAssigner,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import (
    CountEvictor,
    CountTrigger,
    PurgingTrigger,
    default_trigger,
)
from barrierflow.windowing.windows import GlobalWindow


def at(processing_time_ms: int) -> AssignerContext:
    """The assigner context of a record arriving at ``processing_time_ms``."""
    return AssignerContext(processing_time_ms)


def key(record):
    return record[0]


def harness(spec: WindowSpec, **settings) -> OperatorHarness:
    return OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=key), **settings)


def windowed(assigner, contents, function=None, window_function=None, **kw) -> WindowSpec:
    trigger = kw.pop("trigger", None) or default_trigger(assigner)
    return WindowSpec(assigner, trigger, contents, function, window_function, **kw)


def add_values(a, b):
    return (a[0], a[1] + b[1])


class WithWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        for element in elements:
            yield (key, context.window().start, context.window().end, element[1])


class CountAndSum(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        return [accumulator[0] + 1, accumulator[1] + value[1]]

    def get_result(self, accumulator):
        return tuple(accumulator)

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


records_st = st.lists(
    st.tuples(st.sampled_from("abc"), st.integers(0, 100), st.integers(0, 3_000)), max_size=60
)


class SumElements(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield (key, context.window().start, context.window().end, sum(e[1] for e in elements))


def run(h: OperatorHarness, records: list[tuple], watermark_every: int = 7) -> tuple[list, list]:
    """Feeds (key, value, timestamp) records in chunks, the watermark just behind each chunk,
    then the end of time; returns everything emitted with its timestamps."""
    out: list = []
    out_ts: list = []
    for i in range(0, len(records), watermark_every):
        chunk = records[i : i + watermark_every]
        for emitted, stamps in (
            h.process_timed([(k, v) for k, v, _ in chunk], [t for _, _, t in chunk]),
            h.watermark(chunk[-1][2] - 1),
        ):
            out += emitted
            out_ts += stamps
    emitted, stamps = h.watermark(MAX_WATERMARK)
    return out + emitted, out_ts + stamps


def window_sums(assigner, records) -> Counter:
    expected: dict[tuple, int] = defaultdict(int)
    for k, v, t in records:
        for window in assigner.assign_windows((k, v), t, at(0)):
            expected[(k, window.start, window.end)] += v
    return Counter((k, s, e, total) for (k, s, e), total in expected.items())


@settings(max_examples=60, deadline=None)
@given(records_st, st.sampled_from(["tumbling", "sliding"]), st.booleans())
def test_event_time_windows_sum_every_value_into_its_windows(records, kind, buffered):
    assigner = (
        TumblingEventTimeWindows.of(1_000)
        if kind == "tumbling"
        else SlidingEventTimeWindows.of(1_000, 250)
    )
    if buffered:  # every element kept; the window function sums them
        spec = windowed(assigner, Contents.ELEMENTS, None, SumElements())
    else:  # one accumulator per window, the window function sees the one result
        spec = windowed(assigner, Contents.REDUCE, add_values, WithWindow())
    records = sorted(records, key=lambda r: r[2])  # in order: none is late

    out, out_ts = run(harness(spec), records)

    assert Counter(out) == window_sums(assigner, records)
    assert out_ts == [end - 1 for _, _, end, _ in out]  # each at its window's last moment


def test_aggregate_fires_one_result_per_key_and_window_when_the_watermark_passes_it():
    h = harness(windowed(TumblingEventTimeWindows.of(10), Contents.AGGREGATE, CountAndSum()))
    assert h.process_timed([("a", 1), ("b", 5), ("a", 2), ("a", 7)], [0, 3, 9, 10]) == ([], [])
    assert h.watermark(8) == ([], [])
    assert h.watermark(9) == ([(2, 3), (1, 5)], [9, 9])
    assert h.watermark(19) == ([(1, 7)], [19])
    assert h.watermark(MAX_WATERMARK) == ([], [])


@pytest.mark.parametrize("contents", [Contents.REDUCE, Contents.ELEMENTS])
def test_a_record_bridging_two_sessions_merges_them_into_one(contents):
    fn, wfn = (add_values, WithWindow()) if contents is Contents.REDUCE else (None, SumElements())
    h = harness(windowed(EventTimeSessionWindows.with_gap(10), contents, fn, wfn))
    h.process_timed([("a", 1), ("a", 2), ("b", 4)], [0, 18, 9])  # a: [0,10) and [18,28)
    h.process_timed([("a", 3)], [9])  # [9,19) touches both
    out, _ = h.watermark(MAX_WATERMARK)
    assert sorted(out) == [("a", 0, 28, 6), ("b", 9, 19, 4)]


def test_sessions_that_do_not_touch_fire_apart_at_their_own_ends():
    h = harness(windowed(EventTimeSessionWindows.with_gap(10), Contents.REDUCE, add_values,
                         WithWindow()))  # fmt: skip
    h.process_timed([("a", 1), ("a", 2)], [0, 30])
    assert h.watermark(9) == ([("a", 0, 10, 1)], [9])
    assert h.watermark(39) == ([("a", 30, 40, 2)], [39])


def test_count_windows_tumbling_and_sliding():
    tumbling = harness(WindowSpec(
        GlobalWindows_(), PurgingTrigger.of(CountTrigger.of(3)), Contents.REDUCE, add_values
    ))  # fmt: skip
    out, _ = tumbling.process_timed([("a", v) for v in range(1, 8)], [0] * 7)
    assert out == [("a", 6), ("a", 15)]  # 1+2+3, 4+5+6; 7 waits for two more

    class Listed(ProcessWindowFunction):
        def process(self, key, context, elements):
            assert context.window() == GlobalWindow()
            yield [v for _, v in elements]

    sliding = harness(WindowSpec(
        GlobalWindows_(), CountTrigger.of(2), Contents.ELEMENTS, None, Listed(),
        CountEvictor.of(3),
    ))  # fmt: skip
    out, _ = sliding.process_timed([("a", v) for v in range(1, 7)], [0] * 6)
    assert out == [[1, 2], [2, 3, 4], [4, 5, 6]]


def GlobalWindows_():
    from barrierflow.windowing.window_assigners import GlobalWindows

    return GlobalWindows.create()


def test_allowed_lateness_fires_a_window_again_and_then_drops_what_comes_too_late():
    h = harness(windowed(TumblingEventTimeWindows.of(10), Contents.REDUCE, add_values,
                         WithWindow(), allowed_lateness_ms=5))  # fmt: skip
    h.process_timed([("a", 1)], [1])
    assert h.watermark(9) == ([("a", 0, 10, 1)], [9])
    assert h.process_timed([("a", 2)], [2]) == ([("a", 0, 10, 3)], [9])  # late, allowed
    assert h.watermark(14) == ([], [])  # the window's state is gone
    assert h.process_timed([("a", 4)], [3]) == ([], [])  # too late
    assert h.operator.late_records_dropped == 1
    sampled = {name: value for _, name, value in h.metrics.sample()}
    assert sampled["numLateRecordsDropped"] == 1
    assert h.watermark(MAX_WATERMARK) == ([], [])


def test_processing_time_windows_fire_on_the_wall_clock():
    hour = 3_600_000
    h = harness(windowed(TumblingProcessingTimeWindows.of(hour), Contents.REDUCE, add_values))
    h.process_timed([("a", 1), ("a", 2), ("b", 5)], [0, 0, 0])
    assert h.watermark(MAX_WATERMARK) == ([], [])  # event time does not fire them
    out, _ = h.processing_time(h.operator.timers.current_processing_time() + 2 * hour)
    assert sorted(out) == [("a", 3), ("b", 5)]


def test_a_custom_trigger_is_refused_for_sessions_when_it_cannot_merge():
    with pytest.raises(ValueError, match="cannot merge"):
        harness(WindowSpec(EventTimeSessionWindows.with_gap(5), CountTrigger.of(2),
                           Contents.REDUCE, add_values))  # fmt: skip


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(100),
                                      EventTimeSessionWindows.with_gap(40)])  # fmt: skip
def test_open_windows_and_their_timers_restore_at_another_parallelism(
    tmp_path: Path, backend, assigner
):
    spec = windowed(assigner, Contents.REDUCE, add_values, WithWindow())
    config = StateBackendConfig(kind=backend)
    records = [(f"k{i % 13}", i, i * 7) for i in range(300)]
    key_group = KeyGroupCache(128).key_group

    def subtasks(parallelism, restore=None, attempt=1):
        return [
            OperatorHarness(
                operator(TransformationKind.WINDOW, spec, key_selector=key),
                state_backend=config, local_dir=str(tmp_path / f"{attempt}-{s}"),
                restore=restore, subtask=s, parallelism=parallelism, attempt=attempt,
            )
            for s in range(parallelism)
        ]  # fmt: skip

    first, second = records[:150], records[150:]
    before = subtasks(2)
    out = []
    for h in before:
        own = h.operator.backend._range
        mine = [r for r in first if key_group(r[0]) in own]
        h.process_timed([(k, v) for k, v, _ in mine], [t for _, _, t in mine])
        out += h.watermark(first[-1][2] - 200)[0]  # some windows fire, later ones stay open
    states = [h.snapshot(1) for h in before]
    restore = OperatorRestore([None, None], [k for s in states for k in s.keyed_state])
    after = subtasks(3, restore, attempt=2)
    for h in after:
        own = h.operator.backend._range
        mine = [r for r in second if key_group(r[0]) in own]
        if mine:
            h.process_timed([(k, v) for k, v, _ in mine], [t for _, _, t in mine])
        out += h.watermark(MAX_WATERMARK)[0]
    for h in before + after:
        h.close()

    assert Counter(out) == window_sums_merged(assigner, records)


def window_sums_merged(assigner, records) -> Counter:
    if not isinstance(assigner, MergingWindowAssigner):
        return window_sums(assigner, records)
    sessions = []
    for k in sorted({r[0] for r in records}):
        stamps = sorted((t, v) for kk, v, t in records if kk == k)
        start, end, total = stamps[0][0], stamps[0][0] + assigner.gap, 0
        for t, v in stamps:
            if t > end:
                sessions.append((k, start, end, total))
                start, total = t, 0
            end, total = max(end, t + assigner.gap), total + v
        sessions.append((k, start, end, total))
    return Counter(sessions)
