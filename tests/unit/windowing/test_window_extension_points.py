"""PyFlink's window extension points in the window operator: a user's WindowAssigner (with
the assigner context and its keyed state) and MergingWindowAssigner (merging through the
callback), the count assigners, a trigger merging its state in on_merge, and the window
serializers' bytes (PyFlink's layout)."""

from __future__ import annotations

from io import BytesIO

import pytest

from barrierflow.datastream.window import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    CountWindow,
    CountWindowSerializer,
    GlobalWindow,
    GlobalWindowSerializer,
    MergingWindowAssigner,
    TimeWindow,
    TimeWindowSerializer,
    Trigger,
    TriggerResult,
    WindowAssigner,
)
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.state.descriptors import ReducingStateDescriptor
from barrierflow.testing.harness import OperatorHarness, operator
from barrierflow.windowing.window_spec import Contents, WindowSpec
from barrierflow.windowing.window_triggers import EventTimeTrigger, default_trigger


def key(record):
    return record[0]


def harness(assigner, trigger=None, contents=Contents.ELEMENTS) -> OperatorHarness:
    spec = WindowSpec(assigner, trigger or default_trigger(assigner), contents)
    return OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=key))


class EveryThird(WindowAssigner):
    """A user's assigner: windows of a key's records by a count in the key's state."""

    def assign_windows(self, element, timestamp, context):
        from barrierflow.state.descriptors import ValueStateDescriptor

        state = context.get_runtime_context().get_state(ValueStateDescriptor("n"))
        n = state.value() or 0
        state.update(n + 1)
        return [CountWindow(n // 3)]

    def get_default_trigger(self, env):
        return FireAtThree()

    def is_event_time(self):
        return False


class FireAtThree(Trigger):
    def on_element(self, element, timestamp, window, ctx):
        count = ctx.get_partitioned_state(ReducingStateDescriptor("c", lambda a, b: a + b))
        count.update((count.value() or 0) + 1)
        return TriggerResult.FIRE_AND_PURGE if count.value() == 3 else TriggerResult.CONTINUE

    def clear(self, window, ctx):
        ctx.get_partitioned_state(ReducingStateDescriptor("c", lambda a, b: a + b)).clear()


def test_a_users_assigner_gets_the_context_with_the_keys_state():
    h = harness(EveryThird())
    out = h.process([("a", 1), ("b", 1), ("a", 2), ("a", 3), ("a", 4), ("b", 2), ("b", 3)])
    assert out == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]
    h.close()


class Gaps(MergingWindowAssigner):
    """A user's sessions: a record opens [t, t + 10); windows that touch merge."""

    def assign_windows(self, element, timestamp, context):
        return [TimeWindow(timestamp, timestamp + 10)]

    def merge_windows(self, windows, callback):
        windows = sorted(windows)
        group = [windows[0]]
        for w in windows[1:]:
            if w.start <= group[-1].end:
                group.append(w)
            else:
                if len(group) > 1:
                    callback.merge(group, TimeWindow(group[0].start, max(g.end for g in group)))
                group = [w]
        if len(group) > 1:
            callback.merge(group, TimeWindow(group[0].start, max(g.end for g in group)))

    def get_default_trigger(self, env):
        return EventTimeTrigger()

    def is_event_time(self):
        return True


def test_a_users_merging_assigner_merges_through_the_callback():
    h = harness(Gaps())
    h.process_timed([("a", 1), ("a", 2), ("a", 3), ("b", 4)], [0, 8, 40, 5])
    out, stamps = h.watermark(MAX_WATERMARK)
    assert sorted(out) == [("a", 1), ("a", 2), ("a", 3), ("b", 4)]
    assert sorted(stamps) == [14, 17, 17, 49]  # sessions [0, 18), [40, 50), [5, 15)
    h.close()


class CountingTrigger(Trigger):
    """Fires a window at its end, with how many records it got; its count merges."""

    COUNT = ReducingStateDescriptor("count", lambda a, b: a + b)

    def on_element(self, element, timestamp, window, ctx):
        state = ctx.get_partitioned_state(self.COUNT)
        state.update((state.value() or 0) + 1)
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self):
        return True

    def on_merge(self, window, ctx):
        ctx.merge_partitioned_state(self.COUNT)
        ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx):
        ctx.get_partitioned_state(self.COUNT).clear()
        ctx.delete_event_time_timer(window.max_timestamp())


def test_a_trigger_merges_its_state_when_sessions_merge():
    from barrierflow.datastream.functions.one_input import ProcessWindowFunction

    class Report(ProcessWindowFunction):
        def process(self, key, context, elements):
            yield (key, context.window(), len(list(elements)))

    trigger = CountingTrigger()
    spec = WindowSpec(Gaps(), trigger, Contents.ELEMENTS, None, Report())
    h = OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=key))
    h.process_timed([("a", 1), ("a", 2), ("a", 3)], [0, 15, 8])  # the third joins both
    h.operator.backend.key_context.key = "a"
    counts = dict(h.operator.trigger_state.items())
    assert counts == {("count", TimeWindow(0, 25)): 3}  # 1 + 1 + 1, merged into one window
    out, _ = h.watermark(MAX_WATERMARK)
    assert out == [("a", TimeWindow(0, 25), 3)]
    assert list(h.operator.trigger_state.keys()) == []  # cleared with the window
    h.close()


def test_a_value_state_of_a_trigger_cannot_merge_and_the_error_says_what_to_use():
    from barrierflow.state.descriptors import ValueStateDescriptor

    class ValueMerging(CountingTrigger):
        def on_merge(self, window, ctx):
            ctx.merge_partitioned_state(ValueStateDescriptor("v"))

    spec = WindowSpec(Gaps(), ValueMerging(), Contents.ELEMENTS)
    h = OperatorHarness(operator(TransformationKind.WINDOW, spec, key_selector=key))
    with pytest.raises(Exception, match="only a ReducingStateDescriptor's state merges"):
        h.process_timed([("a", 1), ("a", 2)], [0, 5])
    h.close()


def test_count_tumbling_windows_fire_every_n_records_of_a_key():
    h = harness(CountTumblingWindowAssigner.of(2))
    out = h.process([("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2), ("a", 4)])
    assert out == [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("a", 3), ("a", 4)]
    h.close()


def test_count_sliding_windows_hold_size_records_every_slide_as_pyflinks():
    assigner = CountSlidingWindowAssigner.of(3, 2)
    h = harness(assigner)
    out = h.process([("a", i) for i in range(7)])
    # window i: records 2i .. 2i + 2 of the key; each fires once it has 3
    assert out == [("a", 0), ("a", 1), ("a", 2), ("a", 2), ("a", 3), ("a", 4), ("a", 4),
                   ("a", 5), ("a", 6)]  # fmt: skip
    h.close()


@pytest.mark.parametrize(
    ("serializer", "window", "data"),
    [
        (
            TimeWindowSerializer(),
            TimeWindow(-5, 1000),
            b"\xff" * 7 + b"\xfb" + b"\0" * 6 + b"\x03\xe8",
        ),
        (CountWindowSerializer(), CountWindow(7), b"\0" * 7 + b"\x07"),
        (GlobalWindowSerializer(), GlobalWindow(), b"\0"),
    ],
)
def test_window_serializers_write_pyflinks_bytes_and_read_them_back(serializer, window, data):
    stream = BytesIO()
    serializer.serialize(window, stream)
    assert stream.getvalue() == data
    assert serializer.deserialize(BytesIO(data)) == window
    with pytest.raises(EOFError, match="expected"):
        serializer.deserialize(BytesIO(data[:-1] if len(data) > 1 else b""))
