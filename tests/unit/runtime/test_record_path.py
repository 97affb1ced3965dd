"""One record path: every operator takes a RecordBatch and returns one; a batch without
timestamps comes out without any, and one with them comes out with each output's timestamp
taken from the input it came from (flat_map, filter, process functions, side outputs, timers,
declared output types)."""

from __future__ import annotations

from barrierflow.common import Types
from barrierflow.datastream import OutputTag
from barrierflow.datastream.functions.one_input import KeyedProcessFunction, ProcessFunction
from barrierflow.datastream.output_tag import SideOutput
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.operators import OperatorSpec
from barrierflow.testing.harness import OperatorHarness, operator

SMALL = OutputTag("small")


def run(spec: OperatorSpec, batch: RecordBatch) -> RecordBatch:
    return OperatorHarness(spec).process_batch(batch)


def test_flat_map_gives_each_output_its_inputs_timestamp_and_none_without():
    spec = operator(TransformationKind.FLAT_MAP, lambda n: [n] * n)
    assert run(spec, RecordBatch([2, 0, 1])) == RecordBatch([2, 2, 1])
    assert run(spec, RecordBatch([2, 0, 1], [10, 20, 30])) == RecordBatch([2, 2, 1], [10, 10, 30])


def test_flat_map_of_a_generator_function_keeps_the_timestamps_in_step():
    def twice(n):
        yield n
        yield -n

    spec = operator(TransformationKind.FLAT_MAP, twice)
    assert run(spec, RecordBatch([1, 2], [5, 6])) == RecordBatch([1, -1, 2, -2], [5, 5, 6, 6])


def test_filter_drops_the_timestamps_of_the_records_it_drops():
    spec = operator(TransformationKind.FILTER, lambda n: n % 2)
    assert run(spec, RecordBatch([1, 2, 3])) == RecordBatch([1, 3])
    assert run(spec, RecordBatch([1, 2, 3], [10, 20, 30])) == RecordBatch([1, 3], [10, 30])


def test_map_passes_the_column_on_untouched():
    timestamps = [10, 20]
    out = run(operator(TransformationKind.MAP, lambda n: n + 1), RecordBatch([1, 2], timestamps))
    assert out == RecordBatch([2, 3], timestamps) and out.timestamps is timestamps


class Stamped(KeyedProcessFunction):
    """Emits (value, ctx.timestamp()) per record, sends values below 3 to a side output, and
    sets a processing-time timer at 100 and an event-time timer at the record's time + 5."""

    def process_element(self, value, ctx):
        if value < 3:
            ctx.output(SMALL, value)
        ctx.timer_service().register_processing_time_timer(100)
        if ctx.timestamp() is not None:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 5)
        yield value, ctx.timestamp()

    def on_timer(self, timestamp, ctx):
        yield "timer", timestamp, ctx.time_domain().name


def keyed(function) -> OperatorSpec:
    return OperatorSpec(
        "keyed", "keyed", TransformationKind.PROCESS, function, lambda v: 0, frozenset({"small"})
    )


def test_a_keyed_process_function_sees_no_timestamp_without_event_time():
    h = OperatorHarness(keyed(Stamped()))
    out = h.process_batch(RecordBatch([1, 5]))
    assert out == RecordBatch([(1, None), (5, None), SideOutput("small", 1)])
    assert h.processing_time(100) == ([("timer", 100, "PROCESSING_TIME")], [])


def test_a_keyed_process_function_sees_each_records_timestamp_and_its_outputs_keep_it():
    h = OperatorHarness(keyed(Stamped()))
    out = h.process_batch(RecordBatch([1, 5], [1000, 2000]))
    assert out.values == [(1, 1000), (5, 2000), SideOutput("small", 1)]
    assert out.timestamps == [1000, 2000, 1000]  # a side output keeps its record's
    fired, stamps = h.watermark(1005)
    assert fired == [("timer", 1005, "EVENT_TIME")] and stamps == [1005]


class Halves(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 2 == 0:
            yield value // 2, ctx.timestamp()


def test_a_process_function_on_a_stream_that_is_not_keyed_takes_the_same_path():
    spec = operator(TransformationKind.PROCESS, Halves())
    assert run(spec, RecordBatch([2, 3, 4])) == RecordBatch([(1, None), (2, None)])
    assert run(spec, RecordBatch([2, 3, 4], [7, 8, 9])) == RecordBatch([(1, 7), (2, 9)], [7, 9])


def test_a_declared_output_type_converts_the_values_and_keeps_the_timestamps():
    spec = OperatorSpec(
        "m", "m", TransformationKind.MAP, lambda n: n * 1.5, output_type=Types.FLOAT()
    )
    assert run(spec, RecordBatch([1, 2], [3, 4])) == RecordBatch([1.5, 3.0], [3, 4])
