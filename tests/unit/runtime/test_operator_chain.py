"""The operator chain of a task: batches run through every operator and out to the outputs
(records out counted); a watermark from upstream runs up to the first timestamp assigner and
stops there, and what timers fire goes on through the rest of the chain; the end of input fires
every event-time timer and emits what the operators still buffer; a snapshot covers every
operator, the source included, in chain order."""

from __future__ import annotations

from barrierflow.common import WatermarkStrategy
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import CHECKPOINT
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime import operator_chain
from barrierflow.runtime.operator_factory import create_operator
from barrierflow.runtime.operators import MapOperator
from barrierflow.testing.harness import StreamTaskHarness, operator


class FireAt(KeyedProcessFunction):
    """Sets an event-time timer at each record's value and emits the time when it fires."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value)

    def on_timer(self, timestamp, ctx):
        yield timestamp


def fire_at() -> object:
    return operator(TransformationKind.PROCESS, FireAt(), uid="fire", key_selector=lambda v: 0)


def test_a_batch_runs_through_every_operator_and_counts_as_records_out():
    chain = [
        operator(TransformationKind.FLAT_MAP, lambda v: [v, v], uid="twice"),
        operator(TransformationKind.FILTER, lambda v: v > 1, uid="big"),
        operator(TransformationKind.MAP, lambda v: v * 10, uid="times"),
    ]
    h = StreamTaskHarness(chain).open()
    h.records(0, [1, 2, 3])
    h.run_until_idle()
    assert h.output_records() == [20, 20, 30, 30]
    assert h.task.metrics.records_out == 4
    h.close()


def test_what_timers_fire_goes_on_through_the_rest_of_the_chain():
    after = operator(TransformationKind.MAP, lambda t: ("fired", t), uid="after")
    h = StreamTaskHarness([fire_at(), after], checkpointing=False).open()
    h.records(0, [5, 15])
    h.watermark(0, 10)
    h.run_until_idle()
    assert h.output_records() == [("fired", 5)]
    assert h.output_timestamps() == [5]
    assert h.output_watermarks() == [10]
    h.close()


def test_a_watermark_from_upstream_stops_at_the_first_timestamp_assigner():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda v, _: v)
    chain = [fire_at(), operator(TransformationKind.TIMESTAMPS, strategy, uid="assign")]
    h = StreamTaskHarness(chain, checkpointing=False).open()
    h.records(0, [5])
    h.watermark(0, 10)
    h.run_until_idle()
    assert h.output_records() == [5]  # the timer before the assigner fired
    assert h.output_watermarks() == []  # the assigner makes this task's watermarks
    h.close()


class Holds(MapOperator):
    """Keeps every record until the end of input."""

    def open(self, ctx) -> None:
        self._held: list = []

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        self._held += batch.values
        return RecordBatch([])

    def finish(self) -> RecordBatch:
        return RecordBatch(self._held)


def test_the_end_of_input_fires_every_timer_and_emits_what_operators_still_hold(monkeypatch):
    def create(spec):
        return Holds(spec) if spec.uid == "holds" else create_operator(spec)

    monkeypatch.setattr(operator_chain, "create_operator", create)
    chain = [fire_at(), operator(TransformationKind.MAP, None, uid="holds")]
    h = StreamTaskHarness(chain, checkpointing=False).open()
    h.records(0, [7, 3])
    h.end_of_data(0)
    h.run_until_idle()
    assert h.output_records() == [3, 7]  # fired at the end of time, held until the end
    assert h.task.chain.operators[1]._held == [3, 7]
    h.close()


def test_a_snapshot_covers_every_operator_the_source_first():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 4), uid="numbers")
    double = operator(TransformationKind.MAP, lambda v: 2 * v, uid="double")
    h = StreamTaskHarness([source, double], num_input_channels=0).open()
    snapshots = h.task.chain.snapshot_state(1, CHECKPOINT)
    assert [uid for uid, _ in snapshots] == ["numbers", "double"]
    assert snapshots[0][1].operator_state is not None and snapshots[1][1] is None
    h.close()
