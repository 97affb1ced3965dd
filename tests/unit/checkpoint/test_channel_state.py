"""The channel-state format and its recording: versioned, and what a capture records per
channel is exactly what precedes each channel's barrier."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.channel_state import (
    ChannelStateCapture,
    ChannelStateFormatError,
    decode_channel_state,
    encode_channel_state,
)


def test_a_capture_records_each_channel_until_its_barrier_then_both_sides_complete_it():
    capture = ChannelStateCapture(3)
    capture.record(0, b"rest of the buffer being processed")
    capture.record_channels(frozenset({0, 1}))
    capture.record(1, b"taken before barrier on 1")
    capture.end_channel(1, [b"queued before barrier on 1"])
    assert capture.recording == {0}
    capture.add_output(2, 0, [b"overtaken"])
    capture.add_output(2, 1, [])  # nothing overtaken: nothing stored
    capture.outputs_sent()
    assert not capture.complete  # channel 0 still owes its barrier
    capture.end_channel(0, [])
    capture.input_complete()
    assert capture.complete
    snapshot = capture.snapshot()
    assert [(c.channel, c.buffers) for c in snapshot.inputs] == [
        (0, [b"rest of the buffer being processed"]),
        (1, [b"taken before barrier on 1", b"queued before barrier on 1"]),
    ]
    assert [(o.edge, o.target, o.buffers) for o in snapshot.outputs] == [(2, 0, [b"overtaken"])]
    assert capture.persisted_bytes == sum(
        len(b) for c in [*snapshot.inputs, *snapshot.outputs] for b in c.buffers
    )
    assert decode_channel_state(encode_channel_state(snapshot)) == snapshot


def test_nothing_in_flight_is_no_channel_state():
    capture = ChannelStateCapture(1)
    capture.input_complete()
    capture.outputs_sent()
    assert capture.complete and capture.snapshot() is None and capture.persisted_bytes == 0


@pytest.mark.parametrize("data", [b"", b"\x03\x80", b"\x00"])
def test_channel_state_of_an_unknown_version_is_refused(data):
    with pytest.raises(ChannelStateFormatError, match="version"):
        decode_channel_state(data)
