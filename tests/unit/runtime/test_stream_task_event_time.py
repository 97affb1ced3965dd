"""Event time in a StreamTask, driven in-process by the harness: the watermark is the minimum
over the input channels (idle ones left out), it waits behind a channel blocked for alignment,
the end of input fires every event-time timer, timestamps travel with their records through the
chain, and a job without event time sends neither timestamps nor watermarks."""

from __future__ import annotations

from barrierflow.common import WatermarkStrategy
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.eventtime.watermark_valve import MAX_WATERMARK
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.frames import Kind
from barrierflow.testing.harness import StreamTaskHarness, operator


class FireAt(KeyedProcessFunction):
    """Sets an event-time timer at each record's value; emits (key, time) when one fires."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value)

    def on_timer(self, timestamp, ctx):
        yield (ctx.get_current_key(), timestamp, ctx.time_domain().name)


def timers_task(channels: int = 2) -> StreamTaskHarness:
    fire = operator(TransformationKind.PROCESS, FireAt(), uid="fire", key_selector=lambda v: v % 2)
    return StreamTaskHarness([fire], num_input_channels=channels, checkpointing=False).open()


def test_the_watermark_is_the_minimum_over_the_channels_and_fires_timers_up_to_it():
    h = timers_task()
    h.records(0, [10, 25, 40])
    h.watermark(0, 100)
    h.run_until_idle()
    assert h.output_watermarks() == [] and h.output_records() == []  # channel 1 says nothing
    h.watermark(1, 30)
    h.run_until_idle()
    assert h.output_watermarks() == [30]
    assert h.output_records() == [(0, 10, "EVENT_TIME"), (1, 25, "EVENT_TIME")]
    assert h.output_timestamps() == [10, 25]  # an event-time timer's output is at its time
    h.watermark(1, 200)
    h.run_until_idle()
    assert h.output_watermarks() == [30, 100]
    assert h.output_records()[2:] == [(0, 40, "EVENT_TIME")]
    h.close()


def test_an_idle_channel_is_left_out_until_it_sends_again():
    h = timers_task()
    h.watermark(0, 50)
    h.watermark_status(1, idle=True)
    h.run_until_idle()
    assert h.output_watermarks() == [50]
    h.watermark_status(0, idle=True)
    h.run_until_idle()
    assert [e.idle for e in h.emitted() if e.kind == Kind.WATERMARK_STATUS] == [True]
    h.watermark_status(1, idle=False)
    h.watermark(1, 20)  # behind the task's watermark: it never goes back
    h.watermark(0, 80)  # channel 0 is idle: its watermark waits for its data
    h.run_until_idle()
    assert h.output_watermarks() == [50]
    h.close()


def test_a_watermark_waits_behind_a_channel_blocked_for_alignment():
    h = StreamTaskHarness(
        [operator(TransformationKind.PROCESS, FireAt(), uid="fire", key_selector=lambda v: 0)],
        num_input_channels=2,
    ).open()
    h.records(0, [5])
    h.barrier(0, 1)
    h.watermark(0, 100)  # behind the barrier: blocked with its channel
    h.watermark(1, 100)
    h.run_until_idle()
    assert h.output_watermarks() == []
    h.barrier(1, 1)
    h.run_until_idle()
    kinds = [e.kind for e in h.emitted()]
    assert kinds.index(Kind.BARRIER) < kinds.index(Kind.WATERMARK)
    assert h.output_watermarks() == [100] and h.output_records() == [(0, 5, "EVENT_TIME")]
    h.close()


def test_the_end_of_input_fires_every_event_time_timer_and_ends_time_downstream():
    h = timers_task(channels=1)
    h.records(0, [7, 1_000_000])
    h.watermark(0, 10)
    h.end_of_data(0)
    h.run_until_idle()
    assert h.output_records() == [(1, 7, "EVENT_TIME"), (0, 1_000_000, "EVENT_TIME")]
    emitted = [e.kind for e in h.emitted()]
    assert h.output_watermarks() == [10, MAX_WATERMARK]
    assert emitted.index(Kind.END_OF_DATA) > len(emitted) - 3  # after the last watermark
    h.close()


def test_timestamps_travel_with_their_records_through_the_chain():
    chain = [
        operator(TransformationKind.MAP, lambda v: v * 10, uid="map"),
        operator(TransformationKind.FILTER, lambda v: v != 20, uid="filter"),
        operator(TransformationKind.FLAT_MAP, lambda v: [v, v + 1], uid="flat"),
    ]
    h = StreamTaskHarness(chain, num_input_channels=1, checkpointing=False).open()
    h.timed_records(0, [1, 2, 3], [100, 200, 300])
    h.run_until_idle()
    assert h.output_records() == [10, 11, 30, 31]
    assert h.output_timestamps() == [100, 100, 300, 300]
    h.close()


def test_a_job_without_event_time_sends_plain_buffers_and_no_watermark():
    chain = [operator(TransformationKind.MAP, lambda v: v + 1, uid="map")]
    h = StreamTaskHarness(chain, num_input_channels=2, checkpointing=False).open()
    h.records(0, [1, 2])
    h.records(1, [3])
    h.end_of_data(0)
    h.end_of_data(1)
    h.run_until_idle()
    emitted = h.emitted()
    assert sorted(h.output_records()) == [2, 3, 4]
    assert all(e.timestamps is None for e in emitted if e.kind == Kind.BUFFER)
    assert Kind.WATERMARK not in [e.kind for e in emitted]
    h.close()


def test_a_source_with_a_strategy_stamps_its_records_and_ends_time_at_its_end():
    source = operator(TransformationKind.SOURCE, NumberSequenceSource(1, 5), uid="numbers")
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        lambda v, _: v * 1_000
    )
    stamp = operator(TransformationKind.TIMESTAMPS, strategy, uid="stamps")
    h = StreamTaskHarness([source, stamp], num_input_channels=0, checkpointing=False).open()
    h.run_until_idle()
    assert h.output_records() == [1, 2, 3, 4, 5]
    assert h.output_timestamps() == [1_000, 2_000, 3_000, 4_000, 5_000]
    assert h.output_watermarks()[-1] == MAX_WATERMARK
    h.close()
