"""KafkaSource's reader over a stand-in consumer: a batch of messages becomes the records of
its runs of one partition each, cut at stopping offsets, with offsets in the checkpoint and
the message a schema cannot read named."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from barrierflow.common import SimpleStringSchema
from barrierflow.connectors.kafka import source_reader
from barrierflow.connectors.kafka.partition_split import KafkaPartitionSplit
from barrierflow.datastream.connectors.base import SourceReaderContext
from barrierflow.datastream.connectors.kafka import KafkaSource
from barrierflow.datastream.formats.json import JsonRowDeserializationSchema

PARTITION_EOF = -191


class KafkaException(Exception):
    pass


class KafkaError:
    _PARTITION_EOF = PARTITION_EOF

    def __init__(self, code: int) -> None:
        self._code = code

    def code(self) -> int:
        return self._code

    def __eq__(self, other: object) -> bool:
        # confluent-kafka's leaves an exception set when compared with None: compare by identity
        raise TypeError(f"a KafkaError compared with {other!r}")

    __hash__ = object.__hash__


class Message:
    def __init__(self, partition: int, offset: int, value: bytes, error: int | None = None):
        self._partition, self._offset, self._value = partition, offset, value
        self._error = None if error is None else KafkaError(error)

    def error(self) -> KafkaError | None:
        return self._error

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value


def data(partition: int, *offsets: int) -> list[Message]:
    return [Message(partition, o, json.dumps(f"{partition}@{o}").encode()) for o in offsets]


def end_of(partition: int, offset: int) -> Message:
    return Message(partition, offset, b"", PARTITION_EOF)


class Consumer:
    batches: list[list[Message]] = []

    def __init__(self, config: dict[str, Any]) -> None:
        pass

    def incremental_assign(self, partitions: list[Any]) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return Consumer.batches.pop(0) if Consumer.batches else []

    def close(self) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_client(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.SimpleNamespace(
        Consumer=Consumer,
        KafkaError=KafkaError,
        KafkaException=KafkaException,
        TopicPartition=lambda topic, partition, offset: (topic, partition, offset),
    )
    monkeypatch.setattr(source_reader, "require", lambda *_: module)


def reader(
    *batches: list[Message], stops: tuple[int | None, ...] = (None, None), schema: Any = None
) -> source_reader.KafkaSourceReader:
    Consumer.batches = list(batches)
    source = (
        KafkaSource.builder()
        .set_bootstrap_servers("broker:9092")
        .set_topics("in")
        .set_value_only_deserializer(schema or JsonRowDeserializationSchema())
        .build()
    )
    r = source.create_reader(SourceReaderContext("job", "source", 0, 1))
    r.add_splits([KafkaPartitionSplit("in", p, 0, s) for p, s in enumerate(stops)])
    r.notify_no_more_splits()
    return r


def offsets(r: source_reader.KafkaSourceReader) -> dict[int, int]:
    return {s.partition: s.offset for s in r.snapshot_state(1)}


def test_reader_gives_the_records_of_interleaved_partitions_in_order_with_their_runs():
    r = reader([*data(0, 0, 1), *data(1, 0), *data(0, 2, 3)])

    assert r.poll(100) == ["0@0", "0@1", "1@0", "0@2", "0@3"]
    assert r.split_runs() == [("in-0", 2), ("in-1", 1), ("in-0", 2)]
    assert offsets(r) == {0: 4, 1: 1}


def test_reader_cuts_a_run_at_its_stopping_offset_and_ends_the_split():
    r = reader(data(0, 0, 1, 2, 3), data(1, 0, 1), stops=(2, 2))

    assert r.poll(100) == ["0@0", "0@1"]
    assert r.finished_splits() == ["in-0"]
    assert offsets(r) == {1: 0}
    assert r.poll(100) == ["1@0", "1@1"]
    assert r.finished_splits() == ["in-1"]
    assert r.poll(100) is None


def test_reader_keeps_the_messages_before_an_end_of_partition_that_ends_their_split():
    # offset 2 is a transaction's commit marker: the end of the partition is at 3, its stop
    r = reader([*data(0, 0, 1), end_of(0, 3), *data(1, 0)], stops=(3, None))

    assert r.poll(100) == ["0@0", "0@1", "1@0"]
    assert r.finished_splits() == ["in-0"]
    assert offsets(r) == {1: 1}


def test_reader_skips_what_the_schema_skips_and_moves_past_it():
    schema = JsonRowDeserializationSchema.builder().ignore_parse_errors().build()
    bad = Message(0, 1, b"{not json")
    r = reader([*data(0, 0), bad, *data(0, 2)], schema=schema)

    assert r.poll(100) == ["0@0", "0@2"]
    assert r.split_runs() == [("in-0", 2)]
    assert offsets(r)[0] == 3


def test_reader_names_the_topic_partition_and_offset_of_a_message_it_cannot_read():
    not_utf8 = Message(1, 7, b"\xff\xfe")
    r = reader([*data(1, 5, 6), not_utf8, *data(1, 8)], schema=SimpleStringSchema())

    with pytest.raises(ValueError, match="topic in partition 1 offset 7 with"):
        r.poll(100)


def test_reader_fails_on_an_error_other_than_the_end_of_a_partition():
    r = reader([*data(0, 0), Message(0, 1, b"", error=-195)])

    with pytest.raises(KafkaException):
        r.poll(100)
