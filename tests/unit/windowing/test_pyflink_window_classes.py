"""PyFlink's window classes as programs subclass and name them: generic function and trigger
classes, the Window base, and the dynamic session assigners ``with_dynamic_gap`` returns."""

from __future__ import annotations

from collections.abc import Iterable

from barrierflow.datastream import ProcessWindowFunction, WindowFunction
from barrierflow.datastream.functions import AllWindowFunction, ProcessAllWindowFunction
from barrierflow.datastream.window import (
    CountWindow,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindow,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)
from barrierflow.windowing.window_assigners import AssignerContext


def at(processing_time_ms: int) -> AssignerContext:
    """The assigner context of a record arriving at ``processing_time_ms``."""
    return AssignerContext(processing_time_ms)


def test_function_and_trigger_classes_take_pyflinks_type_parameters():
    class Count(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
        def process(
            self, key: str, context: ProcessWindowFunction.Context[TimeWindow], elements: Iterable
        ) -> Iterable[tuple]:
            return [(key, context.window().start, len(list(elements)))]

    class Sum(WindowFunction[tuple, tuple, str, CountWindow]):
        def apply(self, key, window, inputs):
            return [(key, sum(i[0] for i in inputs))]

    class All(ProcessAllWindowFunction[int, int, TimeWindow]):
        def process(self, context: ProcessAllWindowFunction.Context[TimeWindow], elements):
            return [sum(elements)]

    class AllApply(AllWindowFunction[int, int, TimeWindow]):
        pass

    class Never(Trigger[tuple, TimeWindow]):
        def on_element(self, element, timestamp, window, ctx: Trigger.TriggerContext):
            return TriggerResult.CONTINUE

    class Assigner(WindowAssigner[tuple, TimeWindow]):
        pass

    context = type("Ctx", (), {"window": lambda self: TimeWindow(0, 5)})()
    assert Count().process("k", context, [1, 2]) == [("k", 0, 2)]
    assert Sum().apply("k", CountWindow(0), [(1,), (2,)]) == [("k", 3)]
    assert Never().on_element(None, 0, None, None) is TriggerResult.CONTINUE
    assert All().process(context, [1, 2]) == [3]
    assert AllApply and Assigner


def test_windows_are_windows_with_their_last_moment():
    for window in (TimeWindow(0, 5), CountWindow(3), GlobalWindow.get()):
        assert isinstance(window, Window)
    assert TimeWindow(0, 5).max_timestamp() == 4
    assert GlobalWindow.get() == GlobalWindow()


def test_with_dynamic_gap_returns_the_dynamic_assigners_of_pyflink():
    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element):
            return element[1]

    event = EventTimeSessionWindows.with_dynamic_gap(Gap())
    processing = ProcessingTimeSessionWindows.with_dynamic_gap(Gap())
    assert type(event) is DynamicEventTimeSessionWindows
    assert isinstance(event, MergingWindowAssigner)
    assert type(processing) is DynamicProcessingTimeSessionWindows
    assert not processing.is_event_time()
    assert event.assign_windows(("a", 7), 100, at(0)) == [TimeWindow(100, 107)]
    assert DynamicEventTimeSessionWindows.with_dynamic_gap(Gap()).extractor is not None
