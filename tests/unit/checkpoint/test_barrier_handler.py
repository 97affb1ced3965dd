"""The barrier handlers of an input gate: aligned (exactly once) and counting (at least once)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.checkpoint.barrier_handler import (
    AtLeastOnceBarrierHandler,
    BlockChannel,
    CaptureChannels,
    Decline,
    EndChannelCapture,
    ExactlyOnceBarrierHandler,
    InputStateComplete,
    SnapshotNow,
    UnblockAll,
)
from barrierflow.protocol.checkpoint_barrier import (
    Alignment,
    CheckpointBarrier,
    CheckpointOptions,
    DeclineReason,
)


def barrier(cid: int) -> CheckpointBarrier:
    return CheckpointBarrier(cid, 1_000 + cid)


# --- exactly once (aligned) ----------------------------------------------------------------


def test_aligner_blocks_each_channel_that_delivered_the_barrier_until_all_open_channels_did():
    h = ExactlyOnceBarrierHandler(3)
    assert h.on_barrier(0, barrier(1), now_ns=100) == [BlockChannel(0)]
    assert h.aligning_checkpoint_id == 1
    assert h.on_barrier(2, barrier(1), now_ns=200) == [BlockChannel(2)]
    assert h.on_barrier(1, barrier(1), now_ns=300) == [SnapshotNow(barrier(1), 100), UnblockAll()]
    assert h.aligning_checkpoint_id is None


def test_aligner_with_a_single_channel_snapshots_at_once():
    h = ExactlyOnceBarrierHandler(1)
    assert h.on_barrier(0, barrier(4), now_ns=7) == [SnapshotNow(barrier(4), 7), UnblockAll()]
    assert h.on_barrier(0, barrier(5), now_ns=9) == [SnapshotNow(barrier(5), 9), UnblockAll()]


def test_aligner_newer_barrier_declines_pending_as_subsumed_and_aligns_the_newer_one():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=100)
    actions = h.on_barrier(1, barrier(2), now_ns=200)
    assert actions == [Decline(1, DeclineReason.SUBSUMED), UnblockAll(), BlockChannel(1)]
    assert h.aligning_checkpoint_id == 2
    assert h.on_barrier(0, barrier(2), now_ns=300) == [BlockChannel(0)]
    # the alignment of 2 started when its first barrier arrived, not when 1 started
    assert h.on_barrier(2, barrier(2), now_ns=400) == [SnapshotNow(barrier(2), 200), UnblockAll()]


def test_aligner_ignores_late_barriers_of_a_subsumed_checkpoint():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=1)
    h.on_barrier(1, barrier(2), now_ns=2)
    assert h.on_barrier(2, barrier(1), now_ns=3) == []
    assert h.aligning_checkpoint_id == 2
    h.on_barrier(0, barrier(2), now_ns=4)
    assert h.on_barrier(2, barrier(2), now_ns=5)[0] == SnapshotNow(barrier(2), 2)


def test_aligner_ignores_a_repeated_barrier_of_a_completed_checkpoint():
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, barrier(3), now_ns=1)
    h.on_barrier(1, barrier(3), now_ns=2)
    assert h.on_barrier(0, barrier(3), now_ns=3) == []
    assert h.on_barrier(1, barrier(2), now_ns=4) == []
    assert h.aligning_checkpoint_id is None


def test_aligner_cancel_marker_aborts_the_current_alignment_and_unblocks():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=1)
    h.on_barrier(1, barrier(1), now_ns=2)
    assert h.on_cancel_marker(1) == [Decline(1, DeclineReason.CANCELED), UnblockAll()]
    assert h.aligning_checkpoint_id is None
    # the remaining barrier of the canceled checkpoint is not a new alignment
    assert h.on_barrier(2, barrier(1), now_ns=3) == []
    # the next checkpoint aligns normally
    assert h.on_barrier(0, barrier(2), now_ns=4) == [BlockChannel(0)]


def test_aligner_cancel_marker_of_an_older_checkpoint_leaves_the_alignment_alone():
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, barrier(5), now_ns=1)
    assert h.on_cancel_marker(4) == []
    assert h.aligning_checkpoint_id == 5
    assert h.on_barrier(1, barrier(5), now_ns=2) == [SnapshotNow(barrier(5), 1), UnblockAll()]


def test_aligner_end_of_partition_removes_the_channel_and_can_complete_the_alignment():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=10)
    h.on_barrier(1, barrier(1), now_ns=20)
    assert h.on_end_of_partition(2) == [SnapshotNow(barrier(1), 10), UnblockAll()]
    # channel 2 is no longer required for the next checkpoint either
    assert h.on_barrier(0, barrier(2), now_ns=30) == [BlockChannel(0)]
    assert h.on_barrier(1, barrier(2), now_ns=40) == [SnapshotNow(barrier(2), 30), UnblockAll()]


def test_aligner_end_of_partition_without_alignment_does_nothing():
    h = ExactlyOnceBarrierHandler(2)
    assert h.on_end_of_partition(1) == []
    assert h.on_barrier(0, barrier(1), now_ns=5) == [SnapshotNow(barrier(1), 5), UnblockAll()]


def test_aligner_end_of_partition_of_a_missing_channel_while_others_are_missing_keeps_waiting():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=10)
    assert h.on_end_of_partition(2) == []
    assert h.aligning_checkpoint_id == 1


def test_aligner_cancel_marker_of_a_newer_checkpoint_aborts_the_older_alignment():
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, barrier(1), now_ns=1)  # channel 0 is blocked, aligning 1
    actions = h.on_cancel_marker(2)
    assert UnblockAll() in actions
    # 1 is aborted; 2 is declined here too, so the task forwards the marker downstream
    assert [a.checkpoint_id for a in actions if isinstance(a, Decline)] == [1, 2]
    assert h.aligning_checkpoint_id is None
    # channel 1 now delivers barrier 1 (ignored, 1 is over), records, and ends:
    h.on_barrier(1, barrier(1), now_ns=2)
    assert not any(isinstance(a, SnapshotNow) for a in h.on_end_of_partition(1))


# --- cancel marker of a checkpoint this task has not seen yet (both handlers) --------------


@pytest.mark.parametrize("handler_type", [ExactlyOnceBarrierHandler, AtLeastOnceBarrierHandler])
def test_first_cancel_marker_of_an_unseen_checkpoint_declines_it(handler_type):
    h = handler_type(2)
    actions = h.on_cancel_marker(1)
    assert Decline(1, DeclineReason.CANCELED) in actions
    # and the barrier still coming on the other channel does not revive it
    assert h.on_barrier(1, barrier(1), now_ns=1) == []


# --- at least once ---------------------------------------------------------------------------


def test_counting_handler_never_blocks_and_snapshots_on_the_last_barrier():
    h = AtLeastOnceBarrierHandler(3)
    assert h.on_barrier(0, barrier(1), now_ns=10) == []
    assert h.aligning_checkpoint_id == 1
    assert h.on_barrier(2, barrier(1), now_ns=20) == []
    assert h.on_barrier(1, barrier(1), now_ns=30) == [SnapshotNow(barrier(1), 10)]
    assert h.aligning_checkpoint_id is None


def test_counting_handler_with_a_single_channel_snapshots_at_once():
    h = AtLeastOnceBarrierHandler(1)
    assert h.on_barrier(0, barrier(2), now_ns=4) == [SnapshotNow(barrier(2), 4)]


def test_counting_handler_tracks_several_checkpoints_in_flight():
    h = AtLeastOnceBarrierHandler(2)
    assert h.on_barrier(0, barrier(1), now_ns=1) == []
    assert h.on_barrier(0, barrier(2), now_ns=2) == []
    assert h.on_barrier(1, barrier(1), now_ns=3) == [SnapshotNow(barrier(1), 1)]
    assert h.aligning_checkpoint_id == 2
    assert h.on_barrier(1, barrier(2), now_ns=4) == [SnapshotNow(barrier(2), 2)]


def test_counting_handler_completing_a_checkpoint_declines_older_pending_ones_as_subsumed():
    h = AtLeastOnceBarrierHandler(2)
    h.on_barrier(0, barrier(1), now_ns=1)
    h.on_barrier(0, barrier(2), now_ns=2)
    h.on_barrier(0, barrier(3), now_ns=3)
    assert h.on_barrier(1, barrier(3), now_ns=4) == [
        Decline(1, DeclineReason.SUBSUMED),
        Decline(2, DeclineReason.SUBSUMED),
        SnapshotNow(barrier(3), 3),
    ]
    assert h.aligning_checkpoint_id is None
    assert h.on_barrier(1, barrier(2), now_ns=5) == []  # late


def test_counting_handler_completing_a_checkpoint_keeps_newer_pending_ones():
    h = AtLeastOnceBarrierHandler(2)
    h.on_barrier(0, barrier(1), now_ns=1)
    h.on_barrier(0, barrier(2), now_ns=2)
    assert h.on_barrier(1, barrier(1), now_ns=3) == [SnapshotNow(barrier(1), 1)]
    assert h.aligning_checkpoint_id == 2


def test_counting_handler_cancel_marker_declines_a_pending_checkpoint():
    h = AtLeastOnceBarrierHandler(2)
    h.on_barrier(0, barrier(1), now_ns=1)
    assert h.on_cancel_marker(1) == [Decline(1, DeclineReason.CANCELED)]
    assert h.aligning_checkpoint_id is None
    assert h.on_cancel_marker(1) == []


def test_counting_handler_end_of_partition_completes_pending_checkpoints_in_order():
    h = AtLeastOnceBarrierHandler(3)
    h.on_barrier(0, barrier(1), now_ns=1)
    h.on_barrier(1, barrier(1), now_ns=2)
    h.on_barrier(0, barrier(2), now_ns=3)
    h.on_barrier(1, barrier(2), now_ns=4)
    assert h.on_end_of_partition(2) == [SnapshotNow(barrier(1), 1), SnapshotNow(barrier(2), 3)]
    assert h.on_barrier(0, barrier(3), now_ns=5) == []
    assert h.on_barrier(1, barrier(3), now_ns=6) == [SnapshotNow(barrier(3), 5)]


def test_counting_handler_never_revives_a_canceled_checkpoint():
    h = AtLeastOnceBarrierHandler(3)
    actions = h.on_barrier(0, barrier(1), now_ns=1)
    actions += h.on_cancel_marker(1)  # channel 1's upstream declined 1
    actions += h.on_barrier(2, barrier(1), now_ns=2)
    for channel in range(3):
        actions += h.on_barrier(channel, barrier(2), now_ns=3 + channel)
    declines_of_1 = [a for a in actions if isinstance(a, Decline) and a.checkpoint_id == 1]
    assert declines_of_1 == [Decline(1, DeclineReason.CANCELED)]
    assert [a.barrier.checkpoint_id for a in actions if isinstance(a, SnapshotNow)] == [2]


# --- random arrival orders --------------------------------------------------------------------


@st.composite
def channel_streams(draw, allow_cancel: bool = False):
    """Per channel, in order: records and, per checkpoint 1..m, its barrier (or a cancel marker,
    when the upstream declined it); a channel that stops before the last checkpoint ends."""
    num_channels = draw(st.integers(1, 4))
    num_checkpoints = draw(st.integers(1, 4))
    streams = []
    for _ in range(num_channels):
        delivered = draw(st.integers(0, num_checkpoints))
        events: list[tuple] = []
        for cid in range(1, delivered + 1):
            events += [("record",)] * draw(st.integers(0, 2))
            canceled = allow_cancel and draw(st.integers(0, 3)) == 0
            events.append(("cancel", cid) if canceled else ("barrier", cid))
        events += [("record",)] * draw(st.integers(0, 2))
        if delivered < num_checkpoints or draw(st.booleans()):
            events.append(("eop",))
        streams.append(events)
    return streams


def run_gate(handler, streams, data):
    """Feeds the streams in a random order that respects blocking; returns what happened."""
    n = len(streams)
    pos = [0] * n
    blocked: set[int] = set()
    clock = 0
    first_barrier_ns: dict[int, int] = {}
    snapshots: list[int] = []
    declines: list[int] = []
    blocking_actions = 0
    while True:
        ready = [c for c in range(n) if c not in blocked and pos[c] < len(streams[c])]
        if not ready:
            break
        channel = data.draw(st.sampled_from(ready))
        event = streams[channel][pos[channel]]
        pos[channel] += 1
        clock += 1
        if event[0] == "barrier":
            first_barrier_ns.setdefault(event[1], clock)
            actions = handler.on_barrier(channel, barrier(event[1]), clock)
        elif event[0] == "cancel":
            actions = handler.on_cancel_marker(event[1])
        elif event[0] == "eop":
            actions = handler.on_end_of_partition(channel)
        else:
            actions = []
        for action in actions:
            if isinstance(action, BlockChannel | UnblockAll):
                blocking_actions += 1
            if isinstance(action, BlockChannel):
                blocked.add(action.channel)
            elif isinstance(action, UnblockAll):
                blocked.clear()
            elif isinstance(action, Decline):
                declines.append(action.checkpoint_id)
            else:
                assert isinstance(action, SnapshotNow)
                cid = action.barrier.checkpoint_id
                assert action.barrier == barrier(cid)
                assert action.alignment_started_ns == first_barrier_ns[cid]
                for c, stream in enumerate(streams):
                    done = stream[: pos[c]]
                    if ("eop",) not in done:  # open channel: delivered this barrier
                        assert ("barrier", cid) in done, (c, cid)
                        if isinstance(handler, ExactlyOnceBarrierHandler):
                            # ... and nothing after it: aligned
                            assert done[-1] == ("barrier", cid), (c, cid)
                snapshots.append(cid)
    assert pos == [len(s) for s in streams], "the gate stalled with input left"
    return snapshots, declines, blocking_actions


def delivered_barriers(streams) -> set[int]:
    return {e[1] for s in streams for e in s if e[0] == "barrier"}


@given(streams=channel_streams(), data=st.data())
def test_aligner_snapshots_every_checkpoint_exactly_once_after_all_open_channels_delivered_it(
    streams, data
):
    snapshots, declines, _ = run_gate(ExactlyOnceBarrierHandler(len(streams)), streams, data)
    assert snapshots == sorted(delivered_barriers(streams))
    assert declines == []


@given(streams=channel_streams(allow_cancel=True), data=st.data())
def test_aligner_never_snapshots_a_canceled_checkpoint_nor_acts_twice_on_one(streams, data):
    snapshots, declines, _ = run_gate(ExactlyOnceBarrierHandler(len(streams)), streams, data)
    canceled = {e[1] for s in streams for e in s if e[0] == "cancel"}
    assert snapshots == sorted(delivered_barriers(streams) - canceled)
    assert len(declines) == len(set(declines))
    assert set(declines) <= canceled


@given(streams=channel_streams(), data=st.data())
def test_counting_handler_snapshots_every_checkpoint_exactly_once_without_blocking(streams, data):
    snapshots, declines, blocking_actions = run_gate(
        AtLeastOnceBarrierHandler(len(streams)), streams, data
    )
    assert snapshots == sorted(delivered_barriers(streams))
    assert declines == []
    assert blocking_actions == 0


# --- unaligned, and aligned with a timeout ---------------------------------------------------

MS = 1_000_000  # ns


def unaligned(cid: int) -> CheckpointBarrier:
    return CheckpointBarrier(cid, 1_000 + cid, CheckpointOptions(alignment=Alignment.UNALIGNED))


def timed(cid: int, timeout_ms: int = 100) -> CheckpointBarrier:
    options = CheckpointOptions(
        alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=timeout_ms
    )
    return CheckpointBarrier(cid, 1_000, options)  # the checkpoint started at 1,000 ms


def test_unaligned_snapshots_at_the_first_barrier_and_records_the_other_channels():
    h = ExactlyOnceBarrierHandler(3)
    assert h.on_barrier(1, unaligned(5), now_ns=10, priority=True) == [
        SnapshotNow(unaligned(5), 10, unaligned=True),
        EndChannelCapture(5, 1),  # what channel 1 queued before its barrier
        CaptureChannels(5, frozenset({0, 2})),  # all that 0 and 2 send until their barriers
    ]


def test_unaligned_ends_each_channels_capture_at_its_barrier_and_completes_with_the_last():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(1, unaligned(5), now_ns=10, priority=True)
    assert h.on_barrier(0, unaligned(5), now_ns=20, priority=True) == [EndChannelCapture(5, 0)]
    assert h.aligning_checkpoint_id == 5
    assert h.on_barrier(2, unaligned(5), now_ns=30, priority=True) == [
        EndChannelCapture(5, 2),
        InputStateComplete(5),
    ]
    assert h.aligning_checkpoint_id is None
    assert h.on_barrier(0, unaligned(5), now_ns=40) == []  # late


def test_unaligned_with_one_channel_completes_its_input_state_at_once():
    h = ExactlyOnceBarrierHandler(1)
    assert h.on_barrier(0, unaligned(5), now_ns=10, priority=True) == [
        SnapshotNow(unaligned(5), 10, unaligned=True),
        EndChannelCapture(5, 0),
        InputStateComplete(5),
    ]


def test_unaligned_barrier_of_the_next_checkpoint_declines_the_one_still_recording():
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, unaligned(5), now_ns=10, priority=True)
    assert h.on_barrier(0, unaligned(6), now_ns=20, priority=True) == [
        Decline(5, DeclineReason.SUBSUMED),
        UnblockAll(),
        SnapshotNow(unaligned(6), 20, unaligned=True),
        EndChannelCapture(6, 0),
        CaptureChannels(6, frozenset({1})),
    ]


def test_a_cancel_marker_declines_an_unaligned_checkpoint_still_recording():
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, unaligned(5), now_ns=10, priority=True)
    assert h.on_cancel_marker(5) == [Decline(5, DeclineReason.CANCELED), UnblockAll()]
    assert h.on_barrier(1, unaligned(5), now_ns=20, priority=True) == []


def test_end_of_partition_of_a_recorded_channel_completes_the_input_state():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, unaligned(5), now_ns=10, priority=True)
    h.on_barrier(1, unaligned(5), now_ns=20, priority=True)
    assert h.on_end_of_partition(2) == [InputStateComplete(5)]


def test_aligned_with_timeout_stays_aligned_before_the_timeout():
    h = ExactlyOnceBarrierHandler(2)
    assert h.on_barrier(0, timed(5), now_ns=1_050 * MS) == [BlockChannel(0)]
    assert h.on_alignment_timer(1_100 * MS) == []
    assert h.on_barrier(1, timed(5), now_ns=1_090 * MS) == [
        SnapshotNow(timed(5), 1_050 * MS),
        UnblockAll(),
    ]


def test_aligned_with_timeout_switches_to_unaligned_once_the_timeout_passed():
    h = ExactlyOnceBarrierHandler(3)
    h.on_barrier(0, timed(5), now_ns=1_050 * MS)  # blocked
    assert h.on_alignment_timer(1_101 * MS) == [
        SnapshotNow(timed(5), 1_050 * MS, unaligned=True),
        UnblockAll(),  # channel 0 queued what follows its barrier: not recorded
        CaptureChannels(5, frozenset({1, 2})),
    ]
    assert h.on_barrier(1, timed(5), now_ns=1_200 * MS) == [EndChannelCapture(5, 1)]
    assert h.on_barrier(2, timed(5), now_ns=1_300 * MS) == [
        EndChannelCapture(5, 2),
        InputStateComplete(5),
    ]


def test_aligned_with_timeout_is_unaligned_from_a_first_barrier_that_came_too_late():
    h = ExactlyOnceBarrierHandler(2)
    assert h.on_barrier(1, timed(5), now_ns=1_500 * MS) == [
        SnapshotNow(timed(5), 1_500 * MS, unaligned=True),
        EndChannelCapture(5, 1),
        CaptureChannels(5, frozenset({0})),
    ]


def test_a_barrier_that_overtook_its_channel_switches_an_aligned_with_timeout_checkpoint():
    """Its producer's timeout passed: what it overtook precedes it, and must be recorded."""
    h = ExactlyOnceBarrierHandler(2)
    h.on_barrier(0, timed(5), now_ns=1_050 * MS)
    assert h.on_barrier(1, timed(5), now_ns=1_060 * MS, priority=True) == [
        SnapshotNow(timed(5), 1_050 * MS, unaligned=True),
        EndChannelCapture(5, 1),
        UnblockAll(),
        InputStateComplete(5),
    ]


@given(st.lists(st.sampled_from(["b0", "b1", "b2", "e0", "e1", "e2"]), max_size=12))
def test_unaligned_input_state_completes_once_every_channel_delivered_its_barrier_or_ended(
    events,
):
    h = ExactlyOnceBarrierHandler(3)
    snapshots = completed = 0
    barrier, ended = set(), set()
    for event in events:
        channel = int(event[1])
        if channel in barrier | ended:
            continue  # a channel delivers one barrier, and nothing after its end
        if event[0] == "b":
            barrier.add(channel)
            actions = h.on_barrier(channel, unaligned(5), now_ns=1, priority=True)
        else:
            ended.add(channel)
            actions = h.on_end_of_partition(channel)
        snapshots += sum(isinstance(a, SnapshotNow) for a in actions)
        completed += sum(isinstance(a, InputStateComplete) for a in actions)
    assert snapshots == (1 if barrier else 0)
    assert completed == (1 if barrier and barrier | ended == {0, 1, 2} else 0)
