"""The watermark valve alone: the minimum over active channels, idleness, channels that come
back behind the output, and the end of input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.eventtime.watermark_valve import (
    MAX_WATERMARK,
    MIN_WATERMARK,
    EmitIdleness,
    EmitWatermark,
    WatermarkValve,
)


def test_the_watermark_is_the_minimum_over_the_channels_and_only_moves_forward():
    v = WatermarkValve(3)
    assert v.on_watermark(0, 10) == []
    assert v.on_watermark(1, 5) == []
    assert v.on_watermark(2, 7) == [EmitWatermark(5)]
    assert v.on_watermark(1, 20) == [EmitWatermark(7)]
    assert v.on_watermark(1, 3) == []  # a channel's watermark never goes back
    assert v.on_watermark(2, 30) == [EmitWatermark(10)]
    assert v.watermark == 10


def test_an_idle_channel_is_left_out_so_the_others_advance_the_watermark():
    v = WatermarkValve(2)
    v.on_watermark(0, 100)
    assert v.on_idle(1) == [EmitWatermark(100)]
    assert v.on_watermark(0, 150) == [EmitWatermark(150)]
    assert not v.idle


def test_when_every_channel_is_idle_the_task_is_idle_with_the_highest_watermark_reached():
    v = WatermarkValve(2)
    v.on_watermark(0, 40)
    v.on_watermark(1, 60)
    assert v.on_idle(0) == [EmitWatermark(60)]
    assert v.on_idle(1) == [EmitIdleness(True)]
    assert v.idle
    assert v.on_active(1) == [EmitIdleness(False)]


def test_a_channel_back_from_idleness_behind_the_output_counts_only_once_it_caught_up():
    v = WatermarkValve(2)
    v.on_idle(1)
    assert v.on_watermark(0, 100) == [EmitWatermark(100)]
    v.on_active(1)
    assert v.on_watermark(1, 50) == []  # late: not counted, the output stays at 100
    assert v.on_watermark(0, 200) == [EmitWatermark(200)]
    assert v.on_watermark(1, 150) == []  # still behind 200
    assert v.on_watermark(1, 250) == []  # caught up: counted again
    assert v.on_watermark(0, 300) == [EmitWatermark(250)]


def test_the_watermark_of_an_idle_channel_waits_until_it_is_active():
    v = WatermarkValve(2)
    v.on_watermark(0, 10)
    v.on_idle(1)
    assert v.on_watermark(1, 5) == []
    assert v.watermark == 10


def test_the_end_of_every_input_advances_the_watermark_to_infinity():
    v = WatermarkValve(2)
    v.on_watermark(0, 10)
    v.on_watermark(1, 20)
    assert v.on_end_of_input(0) == [EmitWatermark(20)]
    assert v.on_end_of_input(1) == [EmitWatermark(MAX_WATERMARK)]


def test_an_input_that_ends_while_every_channel_is_idle_makes_the_task_active_again():
    v = WatermarkValve(2)
    v.on_idle(0)
    v.on_idle(1)
    assert v.on_end_of_input(1) == [EmitIdleness(False), EmitWatermark(MAX_WATERMARK)]


def test_a_valve_needs_a_channel():
    with pytest.raises(ValueError, match="at least one input channel"):
        WatermarkValve(0)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-1000, 1000)), max_size=60))
def test_with_every_channel_active_the_output_is_the_minimum_of_the_channel_maxima(events):
    v = WatermarkValve(3)
    highest = [MIN_WATERMARK] * 3
    emitted = [MIN_WATERMARK]
    for channel, timestamp in events:
        highest[channel] = max(highest[channel], timestamp)
        for action in v.on_watermark(channel, timestamp):
            assert isinstance(action, EmitWatermark)
            assert action.timestamp > emitted[-1]
            emitted.append(action.timestamp)
        assert v.watermark == emitted[-1] == min(highest)
