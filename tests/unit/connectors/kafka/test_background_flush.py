"""AT_LEAST_ONCE KafkaSink's flush off the task thread, over a producer whose flush the test
holds: the barrier does not wait for it; records written meanwhile are held and produced after
it, in order; each barrier's future is done only once everything written before that barrier
was delivered; a failed delivery fails that future, the later ones, and the task's next write."""

from __future__ import annotations

import threading
import time
from itertools import repeat
from types import SimpleNamespace

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.interfaces.delivery_guarantee import DeliveryGuarantee
from barrierflow.connectors.kafka import background_flush, sink_writer
from barrierflow.connectors.kafka.background_flush import BackgroundFlush
from barrierflow.datastream.connectors.kafka import KafkaRecordSerializationSchema, KafkaSink
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import StreamTaskHarness, operator


class HeldProducer:
    """Records go to ``queued``; a flush waits until the test lets it go (``release``), then
    delivers everything queued, as librdkafka's flush waits for every record in the producer."""

    def __init__(self) -> None:
        self.queued: list[bytes] = []
        self.delivered: list[bytes] = []
        self.failures: list[str] = []  # what the delivery callback noted
        self._gate = threading.Semaphore(0)
        self.fail_next = False

    def produce(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        self.queued.append(value)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        if not self._gate.acquire(timeout=timeout):
            return len(self.queued)  # not delivered in time
        if self.fail_next:
            self.failures.append("Broker: Message size too large (topic t)")
        self.delivered += self.queued
        self.queued = []
        return 0

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


def test_an_at_least_once_sink_task_goes_on_at_the_barrier_and_acknowledges_once_delivered(
    monkeypatch,
):
    producer = HeldProducer()
    monkeypatch.setattr(
        sink_writer, "require", lambda *_: SimpleNamespace(Producer=lambda c: producer)
    )
    serializer = (
        KafkaRecordSerializationSchema.builder()
        .set_topic("out")
        .set_value_serialization_schema(SimpleStringSchema())
        .build()
    )
    sink = (
        KafkaSink.builder()
        .set_bootstrap_servers("broker:9092")
        .set_record_serializer(serializer)
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )
    h = StreamTaskHarness([operator(TransformationKind.SINK, sink, uid="sink")], emits=False)
    h.open()
    h.records(0, ["1", "2"])
    h.barrier(0, 1)
    h.records(0, ["3"])
    h.run_until_idle()  # the task took the barrier and the next buffer: it did not wait
    assert producer.queued == [b"1", b"2"]  # "3" held until the flush of "1", "2" ends
    assert h.acknowledgements() == []
    producer.release()
    deadline = time.monotonic() + 30
    while not h.acknowledgements():
        assert time.monotonic() < deadline, "checkpoint 1 never acknowledged"
        h.turns(1)
    assert producer.delivered == [b"1", b"2"]
    producer.release()  # for the flush of close()
    h.close()
