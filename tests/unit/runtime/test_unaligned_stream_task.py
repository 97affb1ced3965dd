"""Unaligned checkpoints in one StreamTask, driven by the harness: the first barrier snapshots
at once and overtakes the output backlog, the data in flight becomes channel state, and a task
restored from it produces, record by record, what the original produced after its snapshot.
The aligned-checkpoint timeout switches a blocked alignment to unaligned, and promotes a
barrier that waited too long in the output backlog."""

from __future__ import annotations

import pickle
import time

from barrierflow.checkpoint.channel_state import decode_channel_state
from barrierflow.graph.transformation import TransformationKind
from barrierflow.protocol.checkpoint_barrier import Alignment, CheckpointOptions, DeclineReason
from barrierflow.protocol.frames import Kind
from barrierflow.testing.harness import StreamTaskHarness, operator
from tests.unit.runtime.test_stream_task import keyed_count


def timed(timeout_ms: int) -> CheckpointOptions:
    return CheckpointOptions(
        alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=timeout_ms
    )


def channel_state(ack):
    handle = ack.operator_states["count"].channel_state
    assert handle is not None, "the checkpoint stored no data in flight"
    return decode_channel_state(handle.data)


def replayed_by_restore(harness: StreamTaskHarness, ack) -> list:
    """What a task restored from ``ack`` emits before any new input."""
    restored = harness.restored(ack).open()
    restored.run_until_idle()
    out = restored.output_records()
    restored.close()
    return out


def records_after(harness: StreamTaskHarness, checkpoint_id: int) -> list:
    """What the task emitted after barrier ``checkpoint_id`` in processing order: the records
    its snapshot does not hold."""
    emitted = harness.emitted()
    at = next(
        i
        for i, e in enumerate(emitted)
        if e.kind in (Kind.BARRIER, Kind.PRIORITY_BARRIER)
        and e.barrier.checkpoint_id == checkpoint_id
    )
    return [r for e in emitted[at + 1 :] if e.kind == Kind.BUFFER for r in e.records]


def test_the_first_barrier_snapshots_at_once_and_what_precedes_each_channels_barrier_is_stored():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2, unaligned=True).open()
    h.records(0, ["a"])
    h.records(0, ["b"])
    h.priority_barrier(0, 1)  # overtook [a] and [b], still queued in the gate
    h.records(0, ["c"])  # after the barrier on channel 0: not channel state
    h.turns(1)
    assert [e.kind for e in h.emitted()] == [Kind.PRIORITY_BARRIER]  # snapshot before a, b
    h.records(1, ["a"])  # channel 1 has no barrier yet: recorded
    h.run_until_idle()
    assert h.acknowledgements() == []  # channel 1 still owes its barrier
    h.priority_barrier(1, 1)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert ack.stats.unaligned and ack.stats.persisted_data > 0
    state = channel_state(ack)
    assert [(c.channel, len(c.buffers)) for c in state.inputs] == [(0, 2), (1, 1)]
    assert state.outputs == []
    # processing went on meanwhile, in order: a, b, c of channel 0 interleaved with a of 1
    assert sorted(h.output_records()) == [("a", 1), ("a", 2), ("b", 1), ("c", 1)]
    # restored: the snapshot held nothing; the channel state replays a, b and channel 1's a
    assert sorted(replayed_by_restore(h, ack)) == [("a", 1), ("a", 2), ("b", 1)]
    h.close()


def test_the_barrier_overtakes_the_output_backlog_which_becomes_output_channel_state():
    h = StreamTaskHarness(
        [keyed_count()], num_input_channels=1, unaligned=True, output_credit=1, buffer_size=2
    ).open()
    h.records(0, ["a", "b", "c", "d", "e", "f"])
    h.run_until_idle()
    sent_before = h.output_records()
    assert sent_before == [("a", 1), ("b", 1)]  # one credit: the rest waits in the backlog
    h.priority_barrier(0, 1)
    h.run_until_idle()  # backlogged, and still takes the priority barrier
    (ack,) = h.acknowledgements()
    assert [e.kind for e in h.emitted()][-1] == Kind.PRIORITY_BARRIER
    state = channel_state(ack)
    assert state.inputs == []
    assert [(o.edge, o.target, len(o.buffers)) for o in state.outputs] == [(0, 0, 2)]
    h.grant_output_credit(10)
    h.run_until_idle()
    overtaken = records_after(h, 1)
    assert overtaken == [("c", 1), ("d", 1), ("e", 1), ("f", 1)]
    assert replayed_by_restore(h, ack) == overtaken  # sent again, in order, before new input
    h.close()


def test_a_barrier_that_arrives_while_a_buffer_is_processed_is_handled_between_two_chunks():
    """The rest of the buffer is channel state: processed after the snapshot, and replayed
    by a restore."""
    harness: list[StreamTaskHarness] = []

    def slow(record):
        time.sleep(0.002)  # the chunks shrink to about a millisecond: one record each
        if record == "x3":
            harness[0].priority_barrier(0, 1)
        return record

    h = StreamTaskHarness(
        [operator(TransformationKind.MAP, slow, uid="slow"), keyed_count()],
        num_input_channels=1,
        unaligned=True,
        buffer_size=2,
    )
    harness.append(h)
    h.open()
    h.records(0, ["warm-up"])  # the output channel gets its credit
    h.run_until_idle()
    records = [f"x{i}" for i in range(10)]
    h.records(0, records)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    state = decode_channel_state(ack.operator_states["slow"].channel_state.data)
    assert state.outputs == []  # nothing waited for credit
    (channel,) = state.inputs
    rest = [r for buffer in channel.buffers for r in pickle.loads(buffer)]
    after = [r for r, _ in records_after(h, 1)]
    assert rest == after == records[4:]  # the barrier came while x3 was processed
    assert [r for r, _ in h.output_records()] == ["warm-up", *records]  # each once
    restored = h.restored(ack).open()
    restored.run_until_idle()
    assert restored.output_records() == records_after(h, 1)
    restored.close()
    h.close()


def test_an_alignment_that_outlasts_the_timeout_goes_unaligned_for_the_channels_still_open():
    h = StreamTaskHarness(
        [keyed_count()], num_input_channels=2, unaligned=True, aligned_timeout_ms=30
    ).open()
    now_ms = time.time_ns() // 1_000_000
    h.barrier(0, 1, timed(30), timestamp_ms=now_ms)
    h.records(0, ["after"])  # behind the barrier on a blocked channel
    h.records(1, ["a"])
    h.run_until_idle()
    assert h.output_records() == [("a", 1)]  # aligned so far: channel 0 is blocked
    assert Kind.BARRIER not in [e.kind for e in h.emitted()]
    deadline = time.monotonic() + 5
    while not any(e.kind == Kind.PRIORITY_BARRIER for e in h.emitted()):
        assert time.monotonic() < deadline, "the alignment never timed out"
        h.turns(1)
    h.records(1, ["b"])  # channel 1 is recorded until its barrier
    h.barrier(1, 1, timed(30), timestamp_ms=now_ms)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert ack.stats.unaligned
    state = channel_state(ack)
    assert [c.channel for c in state.inputs] == [1]
    assert sorted(h.output_records()) == [("a", 1), ("after", 1), ("b", 1)]
    assert replayed_by_restore(h, ack) == [("b", 1)]
    h.close()


def test_an_alignment_within_the_timeout_stays_aligned_and_stores_nothing_in_flight():
    h = StreamTaskHarness(
        [keyed_count()], num_input_channels=2, unaligned=True, aligned_timeout_ms=60_000
    ).open()
    now_ms = time.time_ns() // 1_000_000
    h.records(0, ["a"])
    h.barrier(0, 1, timed(60_000), timestamp_ms=now_ms)
    h.barrier(1, 1, timed(60_000), timestamp_ms=now_ms)
    h.run_until_idle()
    (ack,) = h.acknowledgements()
    assert not ack.stats.unaligned and ack.stats.persisted_data == 0
    assert ack.operator_states["count"].channel_state is None
    assert [e.kind for e in h.emitted()] == [Kind.BUFFER, Kind.BARRIER]
    h.close()


def test_a_barrier_that_waited_in_the_output_backlog_past_the_timeout_overtakes_it():
    h = StreamTaskHarness(
        [keyed_count()],
        num_input_channels=1,
        unaligned=True,
        aligned_timeout_ms=30,
        output_credit=1,
        buffer_size=2,
    ).open()
    h.records(0, ["a", "b", "c", "d"])
    h.barrier(0, 1, timed(30), timestamp_ms=time.time_ns() // 1_000_000)
    h.run_until_idle()
    assert h.acknowledgements() == []  # snapshot taken aligned; the barrier waits behind c, d
    deadline = time.monotonic() + 5
    while not h.acknowledgements():
        assert time.monotonic() < deadline, "the barrier was never promoted"
        h.turns(1)
    (ack,) = h.acknowledgements()
    assert ack.stats.unaligned
    assert [e.kind for e in h.emitted()] == [Kind.BUFFER, Kind.PRIORITY_BARRIER]
    state = channel_state(ack)
    assert [(o.edge, len(o.buffers)) for o in state.outputs] == [(0, 1)]
    h.grant_output_credit(10)
    h.run_until_idle()
    assert replayed_by_restore(h, ack) == records_after(h, 1) == [("c", 1), ("d", 1)]
    h.close()


def test_a_newer_barrier_during_the_recording_declines_the_older_checkpoint():
    h = StreamTaskHarness([keyed_count()], num_input_channels=2, unaligned=True).open()
    h.priority_barrier(0, 1)
    h.records(1, ["a"])
    h.run_until_idle()
    h.priority_barrier(0, 2)
    h.priority_barrier(1, 2)
    h.run_until_idle()
    assert [(d.checkpoint_id, d.reason) for d in h.declines()] == [(1, DeclineReason.SUBSUMED)]
    assert [a.checkpoint_id for a in h.acknowledgements()] == [2]
    h.close()
