"""The input gate's credit accounting and channel blocking, over an in-memory socket: a producer
gets its initial credit when it says HELLO and one credit back per buffer the task takes; a
blocked channel's buffers stay queued and earn nothing; frames of other attempts are dropped."""

from __future__ import annotations

import threading

import pytest

from barrierflow.protocol.checkpoint_barrier import (
    Alignment,
    CheckpointBarrier,
    CheckpointOptions,
)
from barrierflow.protocol.frames import (
    BUFFER_SIZE,
    CREDIT,
    HEADER,
    ChannelSequenceError,
    Kind,
    encode_barrier,
    header,
)
from barrierflow.runtime.network.input_gate import InputGate
from barrierflow.testing.in_memory_network import InMemorySocket

TOKEN = 42
BARRIER_1 = encode_barrier(CheckpointBarrier(1, 1_000))


def timed_barrier(checkpoint_id: int, timestamp_ms: int, timeout_ms: int) -> bytes:
    options = CheckpointOptions(
        alignment=Alignment.ALIGNED_WITH_TIMEOUT, aligned_timeout_ms=timeout_ms
    )
    return encode_barrier(CheckpointBarrier(checkpoint_id, timestamp_ms, options))


class Producers:
    def __init__(self, num_channels: int, initial_credit: int = 2) -> None:
        self.socket = InMemorySocket("gate", threading.Condition())
        self.gate = InputGate(self.socket, num_channels, TOKEN, initial_credit)
        self.sent = [0] * num_channels  # per channel, the next frame's sequence number

    def send(self, channel: int, kind: Kind, payload: bytes | None = None, token=TOKEN) -> None:
        sequence = self.sent[channel]
        if token == TOKEN:
            self.sent[channel] += 1
        frames = [f"producer-{channel}".encode(), header(token, kind, channel, sequence)]
        self.socket.deliver(frames if payload is None else [*frames, payload])

    def credits(self) -> list[tuple[bytes, int, int]]:
        """(producer, channel, credit) granted since the last call."""
        granted = []
        for identity, head, credit in self.socket.take_sent():
            token, kind, channel, _ = HEADER.unpack(head)
            assert (token, kind) == (TOKEN, Kind.CREDIT)
            granted.append((identity, channel, CREDIT.unpack(credit)[0]))
        return granted

    def drain(self) -> list[tuple[int, Kind, bytes | None]]:
        items = []
        while (item := self.gate.poll_next()) is not None:
            items.append(item)
        return items


def test_hello_grants_the_initial_credit_to_that_producer():
    p = Producers(2, initial_credit=3)
    p.send(1, Kind.HELLO)
    p.gate.receive_available()
    assert p.credits() == [(b"producer-1", 1, 3)]


def test_each_buffer_taken_returns_one_credit_and_events_return_none():
    p = Producers(1)
    p.send(0, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"one")
    p.send(0, Kind.BARRIER, BARRIER_1)
    p.send(0, Kind.BUFFER, b"two")
    p.gate.receive_available()
    p.credits()
    assert [(kind, payload) for _, kind, payload in p.drain()] == [
        (Kind.BUFFER, b"one"),
        (Kind.BARRIER, BARRIER_1),
        (Kind.BUFFER, b"two"),
    ]
    assert p.credits() == [(b"producer-0", 0, 1), (b"producer-0", 0, 1)]


def test_a_blocked_channel_keeps_its_buffers_queued_and_earns_no_credit():
    p = Producers(2)
    for channel in (0, 1):
        p.send(channel, Kind.HELLO)
        p.send(channel, Kind.BUFFER, f"from {channel}".encode())
    p.gate.block(0)
    assert [(ch, payload) for ch, _, payload in p.drain()] == [(1, b"from 1")]
    assert [(ch, n) for _, ch, n in p.credits()] == [(0, 2), (1, 2), (1, 1)]
    p.gate.unblock_all()
    assert [(ch, payload) for ch, _, payload in p.drain()] == [(0, b"from 0")]
    assert [(ch, n) for _, ch, n in p.credits()] == [(0, 1)]


def test_channels_are_read_round_robin():
    p = Producers(2)
    for channel in (0, 1):
        p.send(channel, Kind.HELLO)
    for payload in (b"a0", b"a1"):
        p.send(0, Kind.BUFFER, payload)
    for payload in (b"b0", b"b1"):
        p.send(1, Kind.BUFFER, payload)
    assert [payload for _, _, payload in p.drain()] == [b"a0", b"b0", b"a1", b"b1"]


def test_frames_of_another_attempt_or_an_unknown_channel_are_dropped():
    p = Producers(1)
    p.send(0, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"stale", token=TOKEN + 1)
    p.socket.deliver([b"stranger", header(TOKEN, Kind.BUFFER, 5), b"unknown channel"])
    p.send(0, Kind.BUFFER, b"fresh")
    assert [payload for _, _, payload in p.drain()] == [b"fresh"]


def test_the_gate_is_finished_once_every_channel_delivered_its_end_of_partition():
    p = Producers(2)
    p.send(0, Kind.END_OF_PARTITION)
    p.drain()
    assert not p.gate.is_finished
    p.send(1, Kind.END_OF_PARTITION)
    p.drain()
    assert p.gate.is_finished


def test_a_priority_barrier_comes_first_with_the_buffers_queued_before_it_on_its_channel():
    p = Producers(2)
    for channel in (0, 1):
        p.send(channel, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"a")
    p.send(1, Kind.BUFFER, b"x")
    p.send(0, Kind.BUFFER, b"b")
    p.send(0, Kind.PRIORITY_BARRIER, BARRIER_1)
    p.send(0, Kind.BUFFER, b"after")
    p.gate.block(0)  # priority barriers pass blocked channels too
    channel, kind, barrier = p.gate.poll_next()
    assert (channel, kind) == (0, Kind.PRIORITY_BARRIER)
    assert barrier.payload == BARRIER_1 and barrier.buffers_before == [b"a", b"b"]
    p.gate.unblock_all()
    assert [payload for _, _, payload in p.drain()] == [b"a", b"x", b"b", b"after"]  # in turn


def test_has_priority_tells_whether_a_priority_barrier_waits():
    p = Producers(1)
    assert not p.gate.has_priority()
    p.send(0, Kind.PRIORITY_BARRIER, BARRIER_1)
    assert p.gate.has_priority()


def test_once_a_checkpoint_went_unaligned_its_queued_and_later_barriers_overtake_their_queues():
    p = Producers(2)
    for channel in (0, 1):
        p.send(channel, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"a")
    p.send(0, Kind.BARRIER, BARRIER_1)
    p.send(0, Kind.BUFFER, b"after")
    p.gate.receive_available()
    p.gate.overtake(1)
    p.send(1, Kind.BUFFER, b"x")
    p.send(1, Kind.BARRIER, BARRIER_1)  # arrives after the switch
    first, second = p.gate.poll_next(), p.gate.poll_next()
    assert [(ch, kind, b.buffers_before) for ch, kind, b in (first, second)] == [
        (0, Kind.PRIORITY_BARRIER, [b"a"]),
        (1, Kind.PRIORITY_BARRIER, [b"x"]),
    ]
    assert [payload for _, _, payload in p.drain()] == [b"a", b"x", b"after"]


def test_another_checkpoints_barrier_does_not_overtake():
    p = Producers(1)
    p.send(0, Kind.HELLO)
    p.gate.overtake(1)
    barrier_2 = encode_barrier(CheckpointBarrier(2, 2_000))
    p.send(0, Kind.BUFFER, b"a")
    p.send(0, Kind.BARRIER, barrier_2)
    assert [kind for _, kind, _ in p.drain()] == [Kind.BUFFER, Kind.BARRIER]


def test_a_queued_barrier_overtakes_its_queue_once_its_aligned_timeout_passed():
    p = Producers(1)
    barrier = timed_barrier(1, timestamp_ms=1_000, timeout_ms=100)  # due at 1.1 s
    p.send(0, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"a")
    p.send(0, Kind.BARRIER, barrier)
    p.send(0, Kind.BUFFER, b"b")
    p.gate.receive_available()
    p.gate.promote_overdue(1_100 * 1_000_000)
    assert not p.gate.has_priority()
    p.gate.promote_overdue(1_101 * 1_000_000)
    _, kind, promoted = p.gate.poll_next()
    assert (kind, promoted.payload, promoted.buffers_before) == (
        Kind.PRIORITY_BARRIER,
        barrier,
        [b"a"],
    )
    assert [payload for _, _, payload in p.drain()] == [b"a", b"b"]


def test_a_timed_barrier_taken_in_turn_is_not_promoted_later():
    p = Producers(1)
    p.send(0, Kind.BARRIER, timed_barrier(1, timestamp_ms=1_000, timeout_ms=100))
    assert [kind for _, kind, _ in p.drain()] == [Kind.BARRIER]
    p.gate.promote_overdue(2_000 * 1_000_000)
    assert p.gate.poll_next() is None


def test_a_gap_in_a_channels_frames_fails_the_gate_naming_the_channel():
    p = Producers(2)
    p.send(1, Kind.HELLO)
    p.send(1, Kind.BUFFER, b"0")
    p.sent[1] += 1  # frame 2 of channel 1 is lost on the way
    p.send(1, Kind.BUFFER, b"2")
    with pytest.raises(
        ChannelSequenceError, match="input channel 1: expected frame 2, got frame 3"
    ):
        p.drain()


def test_credit_frames_carry_their_own_sequence_per_channel():
    p = Producers(2, initial_credit=1)
    p.send(0, Kind.HELLO)
    p.send(1, Kind.HELLO)
    p.send(0, Kind.BUFFER, b"a")
    p.send(0, Kind.BUFFER, b"b")
    p.drain()
    sequences = [
        HEADER.unpack(head)[2:] for _, head, _ in p.socket.take_sent()
    ]  # (channel, sequence)
    assert sequences == [(0, 0), (1, 0), (0, 1), (0, 2)]


def test_an_announced_buffer_size_goes_to_every_producer_in_the_credit_sequence():
    p = Producers(2, initial_credit=1)
    p.send(0, Kind.HELLO)
    p.gate.receive_available()
    p.gate.announce_buffer_size(40)  # channel 1 has not said HELLO yet
    p.send(1, Kind.HELLO)
    p.gate.receive_available()
    frames = [
        (*HEADER.unpack(head)[1:], payload) for _, head, payload in p.socket.take_sent()
    ]  # (kind, channel, sequence, payload)
    assert frames == [
        (Kind.CREDIT, 0, 0, CREDIT.pack(1)),
        (Kind.BUFFER_SIZE, 0, 1, BUFFER_SIZE.pack(40)),
        (Kind.CREDIT, 1, 0, CREDIT.pack(1)),
        (Kind.BUFFER_SIZE, 1, 1, BUFFER_SIZE.pack(40)),  # told as soon as it connected
    ]
