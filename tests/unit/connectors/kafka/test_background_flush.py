"""AT_LEAST_ONCE KafkaSink's flush off the task thread, over a producer whose flush the test
holds: the barrier does not wait for it; records written meanwhile are held and produced after
it, in order; each barrier's future is done only once everything written before that barrier
was delivered; a failed delivery or a flush that timed out fails that future, the later ones,
and the task's next write. In a sink task, each checkpoint is acknowledged only once its own
flush ended, and not at all if it was aborted first; a close while a flush runs purges the
producer rather than flush it from the task thread too."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from itertools import repeat
from types import SimpleNamespace
from typing import Any

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.interfaces.sink import SinkWriterContext
from barrierflow.connectors.kafka import background_flush, sink_writer
from barrierflow.connectors.kafka.background_flush import BackgroundFlush
from barrierflow.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import StreamTaskHarness, operator


class HeldProducer:
    """Records go to ``queued``; a flush waits until the test lets it go (``release``), then
    delivers everything queued, as librdkafka's flush waits for every record in the producer.
    ``time_out_next``: the next flush let go delivers nothing and returns how many records are
    still queued, as librdkafka's when its timeout passed, with no delivery error. ``purge``
    drops what is queued and so ends a flush that waits, which serves each purged record's
    failed delivery report (to ``on_delivery``, a writer's callback, and in ``failures``).
    Two threads in ``flush`` at once fail the one that came second."""

    def __init__(self) -> None:
        self.queued: list[bytes] = []
        self.delivered: list[bytes] = []
        self.failures: list[str] = []  # what the delivery callback noted
        self._gate = threading.Semaphore(0)
        self.fail_next = False
        self.time_out_next = False
        self.flushing = threading.Event()  # a thread is inside flush
        self.flush_threads: list[str] = []  # the name of each thread that called flush
        self.purged = False
        self.on_delivery: Callable[[Any, Any], None] | None = None
        self._reports: list[tuple[Any, Any]] = []  # (error, message): served by the flush

    def configured(self, config: dict[str, Any]) -> HeldProducer:
        """As ``confluent_kafka.Producer(config)``: takes the writer's delivery callback."""
        self.on_delivery = config.get("on_delivery")
        return self

    def produce(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        self.queued.append(value)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        self.flush_threads.append(threading.current_thread().name)
        if self.flushing.is_set():
            raise AssertionError("two threads in the producer's flush at once")
        self.flushing.set()
        try:
            if not self._gate.acquire(timeout=timeout):
                return len(self.queued)  # not delivered in time
            reports, self._reports = self._reports, []
            for error, message in reports:
                if self.on_delivery is not None:
                    self.on_delivery(error, message)
            if self.time_out_next:
                self.time_out_next = False
                return len(self.queued)  # timed out: nothing delivered, and no error
            if self.fail_next:
                self.failures.append("Broker: Message size too large (topic t)")
            self.delivered += self.queued
            self.queued = []
            return 0
        finally:
            self.flushing.clear()

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        self.purged = True
        error = SimpleNamespace(str=lambda: "Local: Purged in queue")
        message = SimpleNamespace(topic=lambda: "out")
        self._reports += [(error, message)] * len(self.queued)
        if self.queued:
            self.failures.append(error.str())
        self.queued = []
        self.release()  # nothing left to wait for: a flush that waits returns

    def release(self) -> None:
        """Lets one flush (waiting or to come) deliver."""
        self._gate.release()


def pairs(*values: str) -> list[tuple[None, bytes]]:
    return [(None, v.encode()) for v in values]


def flusher(producer: HeldProducer) -> BackgroundFlush:
    failure = lambda: producer.failures[0] if producer.failures else None  # noqa: E731
    return BackgroundFlush(producer, failure, "test-flush")


def test_records_written_during_a_flush_are_held_and_produced_after_it_in_order():
    producer = HeldProducer()
    flush = flusher(producer)
    flush.send(repeat("t"), pairs("a", "b"))
    barrier = flush.flush_at_barrier()  # returns at once: the flush waits on its thread
    flush.send(["t", "t"], pairs("c", "d"))
    assert producer.queued == [b"a", b"b"] and not barrier.done()  # c, d held back
    producer.release()
    barrier.result(10)
    assert producer.delivered == [b"a", b"b"]
    flush.send(repeat("t"), pairs("e"))
    assert producer.queued == [b"c", b"d", b"e"]
    flush.close(0)


def test_a_barriers_flush_also_delivers_what_was_held_since_the_barrier_before():
    producer = HeldProducer()
    flush = flusher(producer)
    flush.send(repeat("t"), pairs("a"))
    first = flush.flush_at_barrier()
    flush.send(repeat("t"), pairs("b"))  # held: the first flush runs
    second = flush.flush_at_barrier()
    producer.release()
    first.result(10)
    assert producer.delivered == [b"a"]  # b was held: the second flush produces it
    producer.release()
    second.result(10)
    assert producer.delivered == [b"a", b"b"]
    flush.close(0)


def test_a_failed_delivery_fails_its_barrier_the_later_ones_and_the_next_write():
    producer = HeldProducer()
    producer.fail_next = True
    flush = flusher(producer)
    flush.send(repeat("t"), pairs("a"))
    first = flush.flush_at_barrier()
    second = flush.flush_at_barrier()
    producer.release()
    producer.release()
    with pytest.raises(RuntimeError, match="Message size too large"):
        first.result(10)
    with pytest.raises(RuntimeError, match="Message size too large"):
        second.result(10)
    with pytest.raises(RuntimeError, match="Message size too large"):
        flush.send(repeat("t"), pairs("b"))
    flush.close(0)


def test_a_flush_that_timed_out_fails_the_next_one_even_if_that_one_would_deliver_all():
    """The flush of barrier N returns with records undelivered and no delivery error; had the
    flush of barrier N+1 run, it would have delivered them all, and its checkpoint would have
    completed without knowing that N's records were late: N+1 fails with N."""
    producer = HeldProducer()
    producer.time_out_next = True
    flush = flusher(producer)
    flush.send(repeat("t"), pairs("a"))
    first = flush.flush_at_barrier()
    flush.send(repeat("t"), pairs("b"))  # held: the first flush runs
    second = flush.flush_at_barrier()
    producer.release()
    producer.release()  # the second flush may deliver, if it flushes at all
    with pytest.raises(RuntimeError, match="1 records still unsent"):
        first.result(10)
    with pytest.raises(RuntimeError, match="1 records still unsent"):
        second.result(10)
    assert producer.failures == []  # no delivery failed: only the count said so
    with pytest.raises(RuntimeError, match="still unsent"):
        flush.send(repeat("t"), pairs("c"))
    flush.close(0)


def test_a_full_hold_makes_the_task_wait_for_the_flush(monkeypatch):
    monkeypatch.setattr(background_flush, "HOLD_LIMIT", 2)
    producer = HeldProducer()
    flush = flusher(producer)
    barrier = flush.flush_at_barrier()
    flush.send(repeat("t"), pairs("a", "b"))  # held: the hold is now full
    threading.Timer(0.05, producer.release).start()
    flush.send(repeat("t"), pairs("c"))  # waits for the flush, then produces in order
    assert barrier.done() and producer.queued == [b"a", b"b", b"c"]
    flush.close(0)


def test_close_drops_what_is_held():
    producer = HeldProducer()
    flush = flusher(producer)
    flush.flush_at_barrier()
    flush.send(repeat("t"), pairs("after the barrier"))
    producer.release()
    flush.close(10)
    assert producer.queued == [] and producer.delivered == []  # replayed after a restore


def at_least_once_sink(monkeypatch: pytest.MonkeyPatch, producer: HeldProducer) -> KafkaSink:
    """An AT_LEAST_ONCE KafkaSink whose writers get ``producer``."""
    monkeypatch.setattr(
        sink_writer, "require", lambda *_: SimpleNamespace(Producer=producer.configured)
    )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    return (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )


def sink_task(monkeypatch: pytest.MonkeyPatch, producer: HeldProducer) -> StreamTaskHarness:
    sink = at_least_once_sink(monkeypatch, producer)
    h = StreamTaskHarness([operator(TransformationKind.SINK, sink, uid="sink")], emits=False)
    return h.open()


def acknowledged(h: StreamTaskHarness, until: list[int]) -> None:
    """Turns the task's loop until it sent as many acknowledgements as ``until`` has (the
    flush thread's mail comes when it comes; a generous while at most), then checks them."""
    deadline = time.monotonic() + 30
    while len(ids := [a.checkpoint_id for a in h.acknowledgements()]) < len(until):
        assert time.monotonic() < deadline, f"acknowledged {ids}, never {until}"
        h.turns(1)
    assert ids == until


def test_an_at_least_once_sink_task_goes_on_at_the_barrier_and_acknowledges_once_delivered(
    monkeypatch,
):
    producer = HeldProducer()
    h = sink_task(monkeypatch, producer)
    h.records(0, ["1", "2"])
    h.barrier(0, 1)
    h.records(0, ["3"])
    h.run_until_idle()  # the task took the barrier and the next buffer: it did not wait
    assert producer.queued == [b"1", b"2"]  # "3" held until the flush of "1", "2" ends
    assert h.acknowledgements() == []
    producer.release()
    acknowledged(h, [1])
    assert producer.delivered == [b"1", b"2"]
    producer.release()  # for the flush of close()
    h.close()


def test_each_checkpoint_is_acknowledged_only_once_its_own_flush_ended(monkeypatch):
    """Two barriers, two flushes held: the first flush's end acknowledges checkpoint 1 alone;
    2 waits, however long the task runs, until its own flush ended."""
    producer = HeldProducer()
    h = sink_task(monkeypatch, producer)
    h.records(0, ["1"])
    h.barrier(0, 1)
    h.records(0, ["2"])
    h.barrier(0, 2)
    h.run_until_idle()
    assert h.acknowledgements() == []  # state written (at once, here), deliveries held
    producer.release()  # the flush of barrier 1 ends; that of 2 starts, and waits
    acknowledged(h, [1])
    assert producer.delivered == [b"1"]
    h.run_until_idle()
    assert [a.checkpoint_id for a in h.acknowledgements()] == [1]
    producer.release()
    acknowledged(h, [1, 2])
    assert producer.delivered == [b"1", b"2"] and h.declines() == []
    producer.release()  # for the flush of close()
    h.close()


def test_a_flush_that_ends_after_its_checkpoint_was_aborted_acknowledges_nothing(monkeypatch):
    """The coordinator aborted checkpoint 1 while its records were still on their way: when
    they arrive, nothing is sent for it (an acknowledgement of a checkpoint the coordinator
    forgot, or a decline of one it already gave up)."""
    producer = HeldProducer()
    h = sink_task(monkeypatch, producer)
    h.records(0, ["1"])
    h.barrier(0, 1)
    h.run_until_idle()
    h.notify_aborted(1)
    h.run_until_idle()
    producer.release()  # the flush of the aborted checkpoint ends
    h.records(0, ["2"])
    h.barrier(0, 2)
    producer.release()
    # The flush thread's mail about 1 went before its flush of 2 began, so before its mail
    # about 2: once 2 is acknowledged, the task has looked at 1's end too.
    acknowledged(h, [2])
    assert h.declines() == [] and producer.delivered == [b"1", b"2"]
    producer.release()  # for the flush of close()
    h.close()


def test_a_close_while_a_flush_runs_purges_the_producer_instead_of_flushing_it(monkeypatch):
    """The task closes (canceled, failed over) while the flush thread is inside the producer's
    flush: the close does not flush the producer from the task thread too (two threads in it,
    and another wait), it purges it, which ends the flush; that checkpoint fails."""
    monkeypatch.setattr(background_flush, "CLOSE_WAIT_S", 0.0)
    producer = HeldProducer()
    sink = at_least_once_sink(monkeypatch, producer)
    writer = sink.create_writer(SinkWriterContext("job", "job", "sink", 0, 1, 0))
    writer.write(["1", "2"])
    writer.prepare_commit(1)
    flushing = writer.flushing(1)
    assert flushing is not None
    assert producer.flushing.wait(10), "the flush thread never flushed"
    writer.close()
    assert producer.purged
    assert [name.startswith("kafka-flush") for name in producer.flush_threads] == [True]
    with pytest.raises(RuntimeError, match="Purged in queue"):
        flushing.result(10)  # checkpoint 1 is not acknowledged: a restore replays 1, 2
    assert producer.delivered == []


def test_a_close_while_one_flush_runs_and_the_next_waits_purges_the_producer(monkeypatch):
    """The flush of barrier 2 waits behind that of 1, held in the producer's flush: the close
    cancels the second (done, never run), and still purges rather than flush while the first
    is inside the producer's flush."""
    monkeypatch.setattr(background_flush, "CLOSE_WAIT_S", 0.0)
    producer = HeldProducer()
    sink = at_least_once_sink(monkeypatch, producer)
    writer = sink.create_writer(SinkWriterContext("job", "job", "sink", 0, 1, 0))
    writer.write(["1"])
    writer.prepare_commit(1)
    first = writer.flushing(1)
    writer.write(["2"])
    writer.prepare_commit(2)
    second = writer.flushing(2)
    assert first is not None and second is not None
    assert producer.flushing.wait(10), "the flush thread never flushed"
    writer.close()
    assert producer.purged
    assert [name.startswith("kafka-flush") for name in producer.flush_threads] == [True]
    with pytest.raises(RuntimeError, match="Purged in queue"):
        first.result(10)
    assert second.cancelled()


def test_a_close_after_the_flush_ended_delivers_what_the_producer_still_queues(monkeypatch):
    producer = HeldProducer()
    sink = at_least_once_sink(monkeypatch, producer)
    writer = sink.create_writer(SinkWriterContext("job", "job", "sink", 0, 1, 0))
    writer.write(["1"])
    writer.prepare_commit(1)
    flushing = writer.flushing(1)
    assert flushing is not None
    producer.release()
    flushing.result(10)
    writer.write(["2"])  # after barrier 1: produced, not flushed
    producer.release()  # for the flush of close()
    writer.close()
    assert not producer.purged and producer.delivered == [b"1", b"2"]
