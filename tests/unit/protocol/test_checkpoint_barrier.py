"""Checkpoint options and the versioned barrier frame: decoded by field name, refusing an
unknown version by naming it."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.control import messages as msg
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    Alignment,
    CheckpointBarrier,
    CheckpointKind,
    CheckpointOptions,
    SnapshotFormat,
)
from barrierflow.protocol.frames import (
    BARRIER_FRAME_VERSION,
    BarrierFrameError,
    decode_barrier,
    encode_barrier,
)

options = st.one_of(
    st.builds(
        CheckpointOptions,
        st.sampled_from([CheckpointKind.CHECKPOINT, CheckpointKind.FINAL]),
        st.sampled_from(list(SnapshotFormat)),
        st.sampled_from([Alignment.ALIGNED, Alignment.UNALIGNED]),
    ),
    st.builds(
        CheckpointOptions,
        st.just(CheckpointKind.CHECKPOINT),
        st.sampled_from(list(SnapshotFormat)),
        st.just(Alignment.ALIGNED_WITH_TIMEOUT),
        st.integers(1, 10**9),
    ),
    st.builds(
        CheckpointOptions,
        st.sampled_from(
            [CheckpointKind.SAVEPOINT, CheckpointKind.SUSPEND, CheckpointKind.TERMINATE]
        ),
        st.sampled_from(list(SnapshotFormat)),
        target_location=st.text(min_size=1),
    ),
)


@given(st.integers(0, 2**62), st.integers(0, 2**62), options)
def test_a_barrier_frame_round_trips(checkpoint_id, timestamp_ms, opts):
    barrier = CheckpointBarrier(checkpoint_id, timestamp_ms, opts)
    assert decode_barrier(encode_barrier(barrier)) == barrier


def test_options_travel_in_the_trigger_message():
    savepoint = CheckpointOptions(
        CheckpointKind.SAVEPOINT, SnapshotFormat.CANONICAL, target_location="s3://b/sp-1"
    )
    decoded = msg.decode(msg.encode(msg.TriggerCheckpoint(1, 5, 100, savepoint)))
    assert decoded.options == savepoint and decoded.options.is_savepoint


def test_a_frame_of_an_unknown_version_is_an_error_that_names_the_version():
    frame = bytearray(encode_barrier(CheckpointBarrier(1, 2)))
    frame[0] = BARRIER_FRAME_VERSION + 1
    with pytest.raises(BarrierFrameError, match=f"version {BARRIER_FRAME_VERSION + 1} is not"):
        decode_barrier(bytes(frame))
    with pytest.raises(BarrierFrameError, match="version None"):
        decode_barrier(b"")


def test_fields_are_decoded_by_name_so_a_newer_producers_extra_field_is_ignored():
    body = {
        "options": {"alignment": "unaligned", "a-later-field": 1},
        "timestamp_ms": 9,
        "checkpoint_id": 3,
    }
    frame = bytes((BARRIER_FRAME_VERSION,)) + msgspec.msgpack.encode(body)
    assert decode_barrier(frame) == CheckpointBarrier(
        3, 9, CheckpointOptions(alignment=Alignment.UNALIGNED)
    )


def test_a_damaged_frame_is_reported():
    with pytest.raises(BarrierFrameError, match="undecodable"):
        decode_barrier(bytes((BARRIER_FRAME_VERSION,)) + b"\xc1garbage")


def test_a_savepoint_is_always_aligned():
    with pytest.raises(ValueError, match="savepoint is always aligned"):
        CheckpointOptions(
            CheckpointKind.SAVEPOINT, alignment=Alignment.UNALIGNED, target_location="x"
        )


def test_a_savepoint_and_only_a_savepoint_has_a_target_location():
    with pytest.raises(ValueError, match="only a savepoint, has a target location"):
        CheckpointOptions(CheckpointKind.SAVEPOINT)
    with pytest.raises(ValueError, match="only a savepoint, has a target location"):
        CheckpointOptions(CheckpointKind.FINAL, target_location="/sp")


@pytest.mark.parametrize(
    ("kind", "savepoint", "final", "stops", "commits"),
    [
        (CheckpointKind.CHECKPOINT, False, False, False, True),
        (CheckpointKind.FINAL, False, True, False, True),
        (CheckpointKind.SAVEPOINT, True, False, False, False),
        (CheckpointKind.SUSPEND, True, False, True, True),
        (CheckpointKind.TERMINATE, True, True, False, True),
    ],
)
def test_what_each_kind_of_snapshot_means_for_the_tasks(kind, savepoint, final, stops, commits):
    options = CheckpointOptions(kind, target_location="/sp" if savepoint else "")
    assert options.is_savepoint is savepoint
    assert options.is_final is final
    assert options.stops_sources is stops
    assert options.commits is commits
    assert options.ends_job is (final or stops)


def test_the_alignment_timeout_is_given_exactly_with_aligned_with_timeout():
    with pytest.raises(ValueError, match="aligned_timeout_ms must be positive"):
        CheckpointOptions(alignment=Alignment.ALIGNED_WITH_TIMEOUT)
    with pytest.raises(ValueError, match="and 0 otherwise"):
        CheckpointOptions(aligned_timeout_ms=5)
    assert CheckpointOptions(alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=5)


def test_a_frame_breaking_the_rules_of_the_options_is_refused_when_decoded():
    body = {
        "checkpoint_id": 1,
        "timestamp_ms": 1,
        "options": {"kind": "savepoint", "alignment": "unaligned"},
    }
    with pytest.raises(BarrierFrameError, match="savepoint is always aligned"):
        decode_barrier(bytes((BARRIER_FRAME_VERSION,)) + msgspec.msgpack.encode(body))


def test_the_default_options_are_an_aligned_native_checkpoint():
    assert (
        CheckpointOptions(CheckpointKind.CHECKPOINT, SnapshotFormat.NATIVE, Alignment.ALIGNED, 0)
        == CHECKPOINT
    )
    assert not CHECKPOINT.is_final and not CHECKPOINT.is_savepoint
