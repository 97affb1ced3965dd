"""The producer side of a channel: buffers wait for credit in a backlog, in order, with the
events behind them; a priority event overtakes the backlog and says what it overtook; a barrier
queued with a deadline overtakes it once the deadline passed. With buffer debloating, records
go in buffers of the size the consumer announced, each part against a credit; a real input
gate and output channel number credits and sizes in one sequence."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
import zmq

from barrierflow.graph.transformation import PartitionerSpec, Partitioning
from barrierflow.protocol.buffer_codec import decode_buffer
from barrierflow.protocol.checkpoint_barrier import CheckpointBarrier
from barrierflow.protocol.frames import (
    BUFFER_SIZE,
    CREDIT,
    HEADER,
    ChannelSequenceError,
    Kind,
    encode_barrier,
    header,
)
from barrierflow.protocol.record_batch import RecordBatch
from barrierflow.runtime.network.input_gate import InputGate, bind_gate_socket
from barrierflow.runtime.network.output import OutputChannel, ResultPartition
from barrierflow.testing.in_memory_network import InMemorySocket

TOKEN = 9


def channel() -> tuple[OutputChannel, InMemorySocket]:
    socket = InMemorySocket("output", threading.Condition())
    out = OutputChannel(socket, TOKEN, 0)
    _credits_granted[id(out)] = 0
    return out, socket


def sent(socket: InMemorySocket) -> list[tuple[Kind, bytes | None]]:
    items = []
    for frames in socket.take_sent():
        kind = Kind(HEADER.unpack(frames[0])[1])
        if kind != Kind.HELLO:
            items.append((kind, frames[1] if len(frames) > 1 else None))
    return items


def grant(out: OutputChannel, socket: InMemorySocket, n: int) -> None:
    sequence = _credits_granted.get(id(out), 0)
    _credits_granted[id(out)] = sequence + 1
    socket.deliver([header(TOKEN, Kind.CREDIT, 0, sequence), CREDIT.pack(n)])
    out.receive_credits()


def announce(out: OutputChannel, socket: InMemorySocket, records: int) -> None:
    """The consumer announces a buffer size, in the sequence of its credits."""
    sequence = _credits_granted.get(id(out), 0)
    _credits_granted[id(out)] = sequence + 1
    socket.deliver([header(TOKEN, Kind.BUFFER_SIZE, 0, sequence), BUFFER_SIZE.pack(records)])


_credits_granted: dict[int, int] = {}  # per channel object, credit frames granted so far


def test_without_credit_buffers_and_events_wait_in_order():
    out, socket = channel()
    out.send_buffer(b"1")
    out.send_event(Kind.BARRIER, b"B")
    out.send_buffer(b"2")
    assert sent(socket) == [] and out.backlogged
    grant(out, socket, 1)
    assert sent(socket) == [(Kind.BUFFER, b"1"), (Kind.BARRIER, b"B")]
    grant(out, socket, 5)
    assert sent(socket) == [(Kind.BUFFER, b"2")] and not out.backlogged


def test_a_priority_event_overtakes_the_backlog_and_returns_the_buffers_it_overtook():
    out, socket = channel()
    out.send_buffer(b"1")
    out.send_buffer(b"2")
    assert out.send_priority_event(Kind.PRIORITY_BARRIER, b"P") == [b"1", b"2"]
    assert sent(socket) == [(Kind.PRIORITY_BARRIER, b"P")]
    grant(out, socket, 2)
    assert sent(socket) == [(Kind.BUFFER, b"1"), (Kind.BUFFER, b"2")]  # still sent, after it


def test_a_queued_barrier_overtakes_the_backlog_once_its_deadline_passed():
    out, socket = channel()
    out.send_buffer(b"1")
    barrier = b"B"
    out.send_event(Kind.BARRIER, barrier, deadline_ns=1_000)
    out.send_buffer(b"2")
    assert out.promote_overdue(999) == [] and out.holds(barrier)
    assert out.promote_overdue(1_001) == [(barrier, [b"1"])]
    assert sent(socket) == [(Kind.PRIORITY_BARRIER, barrier)] and not out.holds(barrier)
    grant(out, socket, 5)
    assert sent(socket) == [(Kind.BUFFER, b"1"), (Kind.BUFFER, b"2")]


def test_a_barrier_sent_in_its_turn_is_no_longer_promoted():
    out, socket = channel()
    out.send_buffer(b"1")
    out.send_event(Kind.BARRIER, b"B", deadline_ns=1_000)
    grant(out, socket, 1)
    assert out.promote_overdue(5_000) == []
    assert sent(socket) == [(Kind.BUFFER, b"1"), (Kind.BARRIER, b"B")]


def test_every_frame_sent_carries_the_next_sequence_number_of_its_channel():
    out, socket = channel()
    grant(out, socket, 1)
    out.send_buffer(b"1")
    out.send_event(Kind.BARRIER, b"B")
    out.send_buffer(b"2")  # no credit: waits
    assert out.send_priority_event(Kind.PRIORITY_BARRIER, b"P") == [b"2"]
    grant(out, socket, 1)
    frames = socket.take_sent()
    assert [HEADER.unpack(f[0])[3] for f in frames] == [0, 1, 2, 3, 4]  # HELLO first
    assert [Kind(HEADER.unpack(f[0])[1]) for f in frames] == [
        Kind.HELLO,
        Kind.BUFFER,
        Kind.BARRIER,
        Kind.PRIORITY_BARRIER,
        Kind.BUFFER,
    ]


def test_a_lost_credit_frame_fails_the_channel_and_says_frames_were_lost():
    out, socket = channel()
    grant(out, socket, 1)
    socket.deliver([header(TOKEN, Kind.CREDIT, 0, 2), CREDIT.pack(1)])  # frame 1 never came
    with pytest.raises(
        ChannelSequenceError, match="expected frame 1, got frame 2; frames were lost"
    ):
        out.receive_credits()


def test_a_repeated_credit_frame_fails_the_channel():
    out, socket = channel()
    grant(out, socket, 1)
    socket.deliver([header(TOKEN, Kind.CREDIT, 0, 0), CREDIT.pack(1)])
    with pytest.raises(ChannelSequenceError, match="a frame came twice"):
        out.receive_credits()


def test_a_buffer_size_announced_between_credits_is_taken_in_their_sequence():
    out, socket = channel()
    grant(out, socket, 1)
    announce(out, socket, 40)
    grant(out, socket, 1)
    assert out.announced_size == 40
    out.send_buffer(b"1")
    out.send_buffer(b"2")
    assert sent(socket) == [(Kind.BUFFER, b"1"), (Kind.BUFFER, b"2")]  # both credits counted


def _partition(
    partitioning: Partitioning, consumers: int, buffer_size: int = 100
) -> tuple[ResultPartition, list[OutputChannel], list[InMemorySocket]]:
    pairs = [channel() for _ in range(consumers)]
    outs, sockets = [o for o, _ in pairs], [s for _, s in pairs]
    for out, socket in pairs:
        grant(out, socket, 1000)
    return (
        ResultPartition(PartitionerSpec(partitioning), outs, buffer_size, 128, "op"),
        outs,
        sockets,
    )


def _buffers(socket: InMemorySocket) -> list[list]:
    return [decode_buffer(payload).values for kind, payload in sent(socket) if kind == Kind.BUFFER]


def test_each_channel_fills_its_buffers_to_the_size_its_consumer_announced():
    partition, outs, sockets = _partition(Partitioning.REBALANCE, 2)
    announce(outs[0], sockets[0], 10)
    partition.receive_credits()
    assert partition.smallest_size == 10
    partition.emit(RecordBatch(list(range(40))))
    assert [len(b) for b in _buffers(sockets[0])] == [10, 10]  # its 20 records, by 10
    assert _buffers(sockets[1]) == []  # 20 of 100: not full yet
    partition.flush()
    assert [len(b) for b in _buffers(sockets[1])] == [20]


def test_records_past_a_debloated_size_go_in_several_buffers_with_their_timestamps():
    partition, outs, sockets = _partition(Partitioning.FORWARD, 1)
    announce(outs[0], sockets[0], 4)
    partition.receive_credits()
    partition.emit(RecordBatch(list(range(10)), list(range(100, 110))))
    partition.flush()
    batches = [decode_buffer(p) for k, p in sent(sockets[0]) if k == Kind.BUFFER]
    assert [b.values for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b.timestamps for b in batches] == [
        [100, 101, 102, 103],
        [104, 105, 106, 107],
        [108, 109],
    ]


def test_a_size_announced_above_the_configured_one_does_not_grow_buffers():
    partition, outs, sockets = _partition(Partitioning.FORWARD, 1, buffer_size=8)
    announce(outs[0], sockets[0], 1000)
    partition.receive_credits()
    assert partition.smallest_size == 8
    partition.emit(RecordBatch(list(range(16))))
    assert [len(b) for b in _buffers(sockets[0])] == [16]  # undebloated: a full batch at once


def test_with_little_credit_the_parts_of_a_debloated_buffer_wait_in_order_before_the_barrier():
    """Two credits, buffers of 3 announced, 10 timestamped records, then a barrier: two parts
    go out, the other two wait in the backlog in order, the barrier behind them; each credit
    that comes sends the next part, the barrier only after the last; every record keeps its
    timestamp."""
    out, socket = channel()
    partition = ResultPartition(PartitionerSpec(Partitioning.FORWARD), [out], 100, 128, "op")
    grant(out, socket, 2)
    announce(out, socket, 3)
    partition.receive_credits()
    partition.emit(RecordBatch(list(range(10)), list(range(100, 110))))
    partition.broadcast_event(Kind.BARRIER, b"B")

    def parts() -> list[tuple[Kind, list | None, list | None]]:
        items = []
        for kind, payload in sent(socket):
            batch = decode_buffer(payload) if kind == Kind.BUFFER else None
            items.append((kind, batch and batch.values, batch and batch.timestamps))
        return items

    assert parts() == [
        (Kind.BUFFER, [0, 1, 2], [100, 101, 102]),
        (Kind.BUFFER, [3, 4, 5], [103, 104, 105]),
    ]
    assert partition.backlogged and out.holds(b"B")
    grant(out, socket, 1)
    assert parts() == [(Kind.BUFFER, [6, 7, 8], [106, 107, 108])]
    assert out.holds(b"B")  # the last part still waits before it
    grant(out, socket, 1)
    assert parts() == [(Kind.BUFFER, [9], [109]), (Kind.BARRIER, None, None)]
    assert not partition.backlogged


def test_a_real_input_gate_and_output_channel_share_one_sequence_for_credits_and_sizes():
    """Over zmq (inproc), as in a slot: the gate grants credit at HELLO, announces a buffer
    size, grants a credit per buffer taken and announces another size; the channel reads both
    kinds in the one sequence the gate numbers them in (a frame counted apart would look lost,
    or repeated, and fail the channel), sends against the credits and fills its buffers to the
    size announced last."""
    context = zmq.Context()
    gate_socket, _, inproc = bind_gate_socket(context, "127.0.0.1", "gate-sequence-test")
    gate = InputGate(gate_socket, 1, TOKEN, initial_credit=2)
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(inproc)
    out = OutputChannel(dealer, TOKEN, 0)  # says HELLO
    partition = ResultPartition(PartitionerSpec(Partitioning.FORWARD), [out], 100, 128, "op")
    taken: list[tuple[int, Kind, object]] = []

    def exchange(done: Callable[[], bool]) -> None:
        """Lets the two take what the other sent, turn by turn, until ``done`` (a while at
        most: inproc frames arrive at once, but not within the sending call)."""
        deadline = time.monotonic() + 10
        while not done():
            assert time.monotonic() < deadline, "the exchange stalled"
            gate_socket.poll(10)
            while (item := gate.poll_next()) is not None:
                taken.append(item)
            dealer.poll(10)
            partition.receive_credits()

    try:
        gate.announce_buffer_size(3)  # kept for the producer: it has not said HELLO yet
        exchange(lambda: out.announced_size == 3)  # HELLO: credit 2 (frame 0), size (1)
        assert partition.smallest_size == 3
        partition.emit(RecordBatch(list(range(10)), list(range(100, 110))))
        partition.broadcast_event(Kind.BARRIER, encode_barrier(CheckpointBarrier(1, 1_000)))
        exchange(lambda: len(taken) == 5)  # each buffer taken: a credit, frames 2, 3, 4, 5
        gate.announce_buffer_size(2)  # frame 6, after credits, before the next
        exchange(lambda: out.announced_size == 2)
        partition.emit(RecordBatch([10, 11, 12, 13], [110, 111, 112, 113]))
        exchange(lambda: len(taken) == 7)
    finally:
        dealer.close()
        gate.close()
        context.term()

    assert [kind for _, kind, _ in taken] == [Kind.BUFFER] * 4 + [Kind.BARRIER] + [Kind.BUFFER] * 2
    buffers = [decode_buffer(p) for _, kind, p in taken if kind == Kind.BUFFER]
    assert [b.values for b in buffers] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9], [10, 11], [12, 13]]
    assert [t for b in buffers for t in b.timestamps] == list(range(100, 114))
