"""KafkaSink's per-record path: a batch serialized, then produced in order, a full local queue
waited out, and the record a serializer refuses named."""

from __future__ import annotations

from typing import Any

import pytest

from barrierflow.connectors.kafka.batch_produce import produce_all, serialized_all


class Producer:
    """Its queue is full when the record at one of the given positions comes, until a poll."""

    def __init__(self, full_at: set[int]) -> None:
        self.sent: list[tuple[str, bytes | None, bytes]] = []
        self._full_at = full_at
        self.polls = 0

    def produce(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        if len(self.sent) in self._full_at:
            raise BufferError("Local: Queue full")
        self.sent.append((topic, key, value))

    def poll(self, timeout: float) -> int:
        self.polls += 1
        self._full_at.discard(len(self.sent))
        return 0


def pair(record: Any) -> tuple[bytes | None, bytes]:
    return (None if record % 2 else b"k", str(record).encode())


def test_produce_all_sends_every_record_in_order_across_a_full_queue():
    producer = Producer(full_at={1, 3})
    pairs = serialized_all(pair, [0, 1, 2, 3, 4])

    produce_all(producer, ["a", "b", "a", "b", "a"], pairs)

    assert producer.sent == [
        ("a", b"k", b"0"),
        ("b", None, b"1"),
        ("a", b"k", b"2"),
        ("b", None, b"3"),
        ("a", b"k", b"4"),
    ]
    assert producer.polls == 2  # each full queue waited out once


def test_serialized_all_names_the_record_it_cannot_serialize():
    def serialize(record: Any) -> tuple[bytes | None, bytes]:
        return None, record.encode()

    with pytest.raises(ValueError, match="cannot serialize record 7: 'int' object"):
        serialized_all(serialize, ["a", "b", 7, "c"])
