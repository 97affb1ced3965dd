"""The inputs of a task: the network input answers the loop with a status for each item of its
gate; the two-input network input sends each channel's records to its input of the head
operator and combines the two inputs' watermarks (the minimum, an idle input left out), with
barriers aligned over all channels; the source input polls the source operator and hands a
following timestamp assigner each batch's splits."""

from __future__ import annotations

import msgspec
import pytest

from barrierflow.checkpoint.channel_state import decode_channel_state, encode_channel_state
from barrierflow.checkpoint.metadata import InlineHandle
from barrierflow.common import WatermarkStrategy
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.frames import Kind
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime import operator_chain
from barrierflow.runtime.input_processor import ChunkSizer, DataInputStatus
from barrierflow.runtime.operator_factory import create_operator
from barrierflow.runtime.operators import TwoInputOperator
from barrierflow.testing.harness import StreamTaskHarness, operator

MORE, NOTHING = DataInputStatus.MORE_AVAILABLE, DataInputStatus.NOTHING_AVAILABLE
END_OF_DATA, END_OF_INPUT = DataInputStatus.END_OF_DATA, DataInputStatus.END_OF_INPUT


def test_the_network_input_says_whether_it_had_something_until_its_input_ended():
    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, lambda v: v + 1)], num_input_channels=2
    ).open()
    task_input = h.task.input
    assert task_input.process_input() is NOTHING
    h.records(0, [1, 2])
    assert task_input.process_input() is MORE
    h.end_of_data(0)
    h.end_of_data(1)
    assert [task_input.process_input() for _ in range(2)] == [MORE, END_OF_DATA]
    h.end_of_partition(0)
    h.end_of_partition(1)
    assert [task_input.process_input() for _ in range(2)] == [MORE, MORE]
    assert task_input.process_input() is END_OF_INPUT
    h.close()


class Sides(TwoInputOperator):
    """Tags each record with the input it came from; each watermark it sees is an output."""

    has_timers = True
    uses_event_time = True

    def process_batch(self, batch: RecordBatch) -> RecordBatch:
        return RecordBatch([("first", v) for v in batch.values], batch.timestamps)

    def process_batch2(self, batch: RecordBatch) -> RecordBatch:
        return RecordBatch([("second", v) for v in batch.values], batch.timestamps)

    def on_watermark(self, watermark: int) -> RecordBatch:
        return RecordBatch([("watermark", watermark)], [watermark])


@pytest.fixture
def two_inputs(monkeypatch) -> StreamTaskHarness:
    """A task whose head takes channel 0 as input 1 and channels 1 and 2 as input 2."""

    def create(spec):
        return Sides(spec) if spec.uid == "sides" else create_operator(spec)

    monkeypatch.setattr(operator_chain, "create_operator", create)
    head = operator(TransformationKind.MAP, None, uid="sides")
    h = StreamTaskHarness(
        [head, operator(TransformationKind.MAP, lambda r: r, uid="after")],
        num_input_channels=3,
        input_of_channel=(0, 1, 1),
    ).open()
    yield h
    h.close()


def test_each_channel_feeds_the_input_its_edge_belongs_to(two_inputs):
    h = two_inputs
    h.records(0, [1])
    h.records(2, [2])
    h.records(1, [3])
    h.run_until_idle()
    assert sorted(h.output_records()) == [("first", 1), ("second", 2), ("second", 3)]


def test_the_watermark_is_the_minimum_of_the_two_inputs(two_inputs):
    h = two_inputs
    h.watermark(0, 50)
    h.watermark(1, 30)
    h.run_until_idle()
    assert h.output_watermarks() == []  # channel 2 of input 2 said nothing yet
    h.watermark(2, 40)
    h.run_until_idle()
    assert h.output_watermarks() == [30]
    assert h.output_records() == [("watermark", 30)]
    h.watermark(1, 60)
    h.watermark(2, 70)
    h.run_until_idle()
    assert h.output_watermarks() == [30, 40, 50]  # input 2 moved to 40, then input 1 held it


def test_an_idle_input_does_not_hold_the_watermark_back(two_inputs):
    h = two_inputs
    h.watermark(0, 50)
    h.watermark_status(1, idle=True)
    h.watermark_status(2, idle=True)
    h.run_until_idle()
    assert h.output_watermarks() == [50]


def test_barriers_align_over_the_channels_of_both_inputs(two_inputs):
    h = two_inputs
    h.barrier(0, 1)
    h.records(0, [7])
    h.barrier(1, 1)
    h.run_until_idle()
    assert h.output_records() == [] and h.acknowledgements() == []  # channel 0 blocked
    h.barrier(2, 1)
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [1]
    assert h.output_records() == [("first", 7)]


def _unaligned_snapshot_with_data_in_flight(monkeypatch):
    """A two-input head's acknowledgement of an unaligned checkpoint whose barriers overtook
    [1] on channel 0 (input 1) and [2, 3] on channel 1 (input 2): its channel state."""
    monkeypatch.setattr(operator_chain, "create_operator", Sides)
    head = operator(TransformationKind.MAP, None, uid="sides")
    h = StreamTaskHarness(
        [head], num_input_channels=2, input_of_channel=(0, 1), unaligned=True
    ).open()
    h.records(0, [1])
    h.records(1, [2, 3])
    h.priority_barrier(0, 1)
    h.priority_barrier(1, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    return h, ack


def test_data_in_flight_is_restored_into_the_input_it_was_recorded_for(monkeypatch):
    h, ack = _unaligned_snapshot_with_data_in_flight(monkeypatch)
    restored = h.restored(ack).open()
    restored.run_until_idle()
    assert sorted(restored.output_records()) == [("first", 1), ("second", 2), ("second", 3)]
    restored.close()
    h.close()


def test_data_in_flight_from_before_connect_had_two_inputs_is_refused(monkeypatch):
    """Such channel state (version 1) holds connect's records tagged with their input."""
    h, ack = _unaligned_snapshot_with_data_in_flight(monkeypatch)
    state = ack.operator_states["sides"]
    recorded = decode_channel_state(state.channel_state.data)
    untagged_then = msgspec.structs.replace(
        recorded, version=1, inputs=[msgspec.structs.replace(c, input=0) for c in recorded.inputs]
    )
    old = InlineHandle(encode_channel_state(untagged_then))
    ack = msgspec.structs.replace(
        ack, operator_states={"sides": msgspec.structs.replace(state, channel_state=old)}
    )
    with pytest.raises(RuntimeError, match="aligned checkpoint or a savepoint"):
        h.restored(ack).open()
    h.close()


def test_a_two_input_head_needs_both_inputs_assigned(monkeypatch):
    monkeypatch.setattr(operator_chain, "create_operator", Sides)
    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, None, uid="sides")],
        num_input_channels=2,
        input_of_channel=(0, 0),
    )
    with pytest.raises(ValueError, match="both inputs fed"):
        h.open()


def test_the_source_input_polls_until_its_source_ended():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 5), uid="numbers")
    h = StreamTaskHarness([source], num_input_channels=0, buffer_size=3).open()
    task_input = h.task.input
    assert [task_input.process_input() for _ in range(3)] == [MORE, MORE, END_OF_DATA]
    assert task_input.process_input() is END_OF_INPUT
    h.run_until_idle()  # sends what was emitted
    assert h.output_records() == [1, 2, 3, 4, 5]
    h.close()


def test_the_source_input_gives_the_assigner_after_it_each_batchs_splits():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 10), uid="numbers")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: v * 100
    )
    assign = operator(TransformationKind.TIMESTAMPS, strategy, uid="assign")
    h = StreamTaskHarness([source, assign], num_input_channels=0, buffer_size=4).open()
    assert h.task.chain.watermarks_per_split
    h.task.input.process_input()  # records 1..4 of split "to-10"
    assigner = h.task.chain.operators[1]
    assert assigner.split_watermarks.splits == ["to-10"]
    assert assigner.periodic_watermark(0) == (399, None)
    while h.task.input.process_input() is MORE:
        pass
    assert assigner.split_watermarks.splits == []  # the split ended: it holds nothing back
    h.run_until_idle()  # sends what was emitted
    assert h.output_timestamps() == [v * 100 for v in range(1, 11)]
    assert Kind.BUFFER in [e.kind for e in h.emitted()]
    h.close()


def chunk_times(sizer: ChunkSizer, cost_s, records: int) -> list[float]:
    """The time each chunk takes when record ``i`` costs ``cost_s(i)``."""
    times, at = [], 0
    while at < records:
        chunk = min(sizer.size, records - at)
        elapsed = sum(cost_s(i) for i in range(at, at + chunk))
        sizer.ran(chunk, elapsed)
        times.append(elapsed)
        at += chunk
    return times


def test_chunks_stay_near_a_millisecond_when_one_record_in_five_is_slow():
    # a 1 ms call every fifth record: a chunk of cheap records alone must not promise more
    times = chunk_times(ChunkSizer(1024), lambda i: 1e-3 if i % 5 == 4 else 1e-6, 20_000)
    assert max(times[5:]) <= 2.5e-3


def test_chunks_grow_to_the_whole_buffer_when_records_are_cheap_and_shrink_when_slow():
    sizer = ChunkSizer(1024)
    chunk_times(sizer, lambda i: 1e-7, 5_000)
    assert sizer.size == 1024
    chunk_times(sizer, lambda i: 1e-4, 3_000)
    assert 5 <= sizer.size <= 20
