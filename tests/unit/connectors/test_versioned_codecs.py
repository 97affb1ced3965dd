"""The versioned codecs of splits, enumerator states and committables: each kind round-trips
through its current version; the plain dicts earlier barrierflows kept in checkpoints decode
through the same codec (its ``DICT_LAYOUT`` branch); a version a codec does not know, and a
value of another type, are refused naming them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from barrierflow.checkpoint.metadata import decode_metadata
from barrierflow.connectors.base.static_split_enumerator import StaticSplitsState
from barrierflow.connectors.builtin.collect_sink import CollectCommittable, CollectSink
from barrierflow.connectors.builtin.range_reader import RangeSplit
from barrierflow.connectors.delta.delta_committable import DeltaAddFile, DeltaCommittable
from barrierflow.connectors.delta.delta_sink import DeltaSink
from barrierflow.connectors.files.file_committable import FileCommittable
from barrierflow.connectors.files.file_enumerator import FileEnumeratorState
from barrierflow.connectors.files.file_sink import FileSink
from barrierflow.connectors.files.file_source import FileSource
from barrierflow.connectors.files.file_split import FileSplit
from barrierflow.connectors.iceberg.iceberg_committable import (
    ICEBERG_COMMITTABLES,
    IcebergCommittable,
)
from barrierflow.connectors.interfaces.versioned_codec import (
    BEFORE_ENUMERATORS,
    DICT_LAYOUT,
    PLAIN_VALUES,
    UnknownVersion,
    VersionedCodec,
    decode_state,
    decode_stored,
    encode_state,
    encode_stored,
)
from barrierflow.connectors.kafka.partition_split import (
    KAFKA_ENUMERATOR_STATES,
    KAFKA_PARTITION_SPLITS,
    KafkaEnumeratorState,
    KafkaPartitionSplit,
)
from barrierflow.connectors.kafka.sink_committable import KAFKA_COMMITTABLES, KafkaCommittable
from barrierflow.connectors.postgres.committable import POSTGRES_COMMITTABLES, PostgresCommittable
from barrierflow.connectors.spark_table.spark_table_committable import (
    SPARK_TABLE_COMMITTABLES,
    SparkTableCommittable,
)
from barrierflow.connectors.tables.table_file_split import (
    TABLE_FILE_ENUMERATOR_STATES,
    TABLE_FILE_SPLITS,
    TableFileSplit,
)
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.state.operator_state import read_snapshot

GOLDEN = Path(__file__).resolve().parents[2] / "integration" / "golden" / "connect_savepoint"

SEQUENCES = NumberSequenceSource(1, 2)
FILES = FileSource("/in")
ADD = DeltaAddFile("part-0.parquet", 10, {"day": "2026-01-01", "k": None}, 7, {"numRecords": 1})

# (codec, a value of today's layout, the same as the plain dict barrierflow kept before codecs)
KINDS: dict[str, tuple[VersionedCodec[Any], Any, dict[str, Any]]] = {
    "range split": (SEQUENCES.split_codec(), RangeSplit(2049, 4000), {"next": 2049, "end": 4000}),
    "file split": (
        FILES.split_codec(),
        FileSplit("/in/a.txt", 12),
        {"path": "/in/a.txt", "offset": 12},
    ),
    "delta file split": (
        TABLE_FILE_SPLITS,
        TableFileSplit("/t/a.parquet", 3, {"day": "1"}, version=4),
        {"path": "/t/a.parquet", "offset": 3, "version": 4, "partition": {"day": "1"}},
    ),
    "iceberg file split": (
        TABLE_FILE_SPLITS,
        TableFileSplit("/w/a.parquet", snapshot=99),
        {"path": "/w/a.parquet", "offset": 0, "snapshot": 99},
    ),
    "kafka partition split": (
        KAFKA_PARTITION_SPLITS,
        KafkaPartitionSplit("in", 3, 17, None),
        {"topic": "in", "partition": 3, "offset": 17, "stop": None},
    ),
    "static splits state": (
        SEQUENCES.enumerator_state_codec(),
        StaticSplitsState([RangeSplit(1, 5)]),
        {"splits": [{"next": 1, "end": 5}]},
    ),
    "bounded file enumerator state": (
        FILES.enumerator_state_codec(),
        FileEnumeratorState([FileSplit("/in/b.txt")]),
        {"pending": [{"path": "/in/b.txt", "offset": 0}]},
    ),
    "monitoring file enumerator state": (
        FILES.enumerator_state_codec(),
        FileEnumeratorState([FileSplit("/in/b.txt")], ["/in/a.txt", "/in/b.txt"]),
        {"pending": [{"path": "/in/b.txt", "offset": 0}], "known": ["/in/a.txt", "/in/b.txt"]},
    ),
    "table enumerator state": (
        TABLE_FILE_ENUMERATOR_STATES,
        FileEnumeratorState([TableFileSplit("/t/a.parquet", version=2)], ["/t/a.parquet"]),
        {
            "pending": [{"path": "/t/a.parquet", "offset": 0, "version": 2, "partition": {}}],
            "known": ["/t/a.parquet"],
        },
    ),
    "kafka enumerator state": (
        KAFKA_ENUMERATOR_STATES,
        KafkaEnumeratorState([("in", 0)], [KafkaPartitionSplit("in", 1, 0, 5)], True),
        {
            "assigned": [["in", 0]],
            "discovered": True,
            "pending": [{"topic": "in", "partition": 1, "offset": 0, "stop": 5}],
        },
    ),
    "file committable": (
        FileSink("/out").committable_codec(),
        FileCommittable("/out/2026", ".part-0-x.pending", "part-0-000003-x.jsonl"),
        {"dir": "/out/2026", "pending": ".part-0-x.pending", "final": "part-0-000003-x.jsonl"},
    ),
    "postgres committable": (
        POSTGRES_COMMITTABLES,
        PostgresCommittable("barrierflow:job:sink:0:4:1", "777"),
        {"gid": "barrierflow:job:sink:0:4:1", "xid": "777"},
    ),
    "kafka committable": (
        KAFKA_COMMITTABLES,
        KafkaCommittable("job-sink-0-1", 1, 6, "out", [(None, b"v"), (b"k", b"w")]),
        {
            "transactional_id": "job-sink-0-1",
            "slot": 1,
            "sequence": 6,
            "topic": "out",
            "records": [[None, b"v"], [b"k", b"w"]],
        },
    ),
    "delta committable": (
        DeltaSink("/t").committable_codec(),
        DeltaCommittable("barrierflow/job/sink", [ADD]),
        {
            "app_id": "barrierflow/job/sink",
            "files": [
                {
                    "path": "part-0.parquet",
                    "size": 10,
                    "modification_time": 7,
                    "partition_values": {"day": "2026-01-01", "k": None},
                    "stats": {"numRecords": 1},
                }
            ],
        },
    ),
    "iceberg committable": (
        ICEBERG_COMMITTABLES,
        IcebergCommittable("job", "sink", ["/w/data/a.parquet"]),
        {"job_id": "job", "sink_uid": "sink", "files": ["/w/data/a.parquet"]},
    ),
    "spark table committable": (
        SPARK_TABLE_COMMITTABLES,
        SparkTableCommittable("app", "part-0.parquet"),
        {"app": "app", "staged": "part-0.parquet"},
    ),
    "collect committable": (
        CollectSink("c").committable_codec(),
        CollectCommittable("0/3/0", b"\x80\x05]\x94."),
        {"delivery": "0/3/0", "records": b"\x80\x05]\x94."},
    ),
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_round_trips_through_its_codec_s_current_version(kind):
    codec, value, _ = KINDS[kind]
    assert codec.version == 2
    stored = encode_stored(codec, value)
    assert stored[0] == 2 and isinstance(stored[1], bytes)
    assert decode_stored(codec, msgspec.msgpack.decode(msgspec.msgpack.encode(stored))) == value


@pytest.mark.parametrize("kind", KINDS)
def test_the_plain_dict_an_earlier_barrierflow_kept_decodes_to_today_s_value(kind):
    codec, value, plain = KINDS[kind]
    assert decode_stored(codec, plain) == value
    assert codec.deserialize(DICT_LAYOUT, msgspec.msgpack.encode(plain)) == value


@pytest.mark.parametrize(
    ("codec", "plain", "value"),
    [
        (
            FileSink("/out").committable_codec(),
            {"pending": ".part-0-x.pending", "final": "part-0-000001-x.jsonl"},
            FileCommittable("/out", ".part-0-x.pending", "part-0-000001-x.jsonl"),
        ),  # before FileSinks had buckets: written in the sink's directory
        (
            POSTGRES_COMMITTABLES,
            {"gid": "barrierflow:job:sink:0:4:1"},
            PostgresCommittable("barrierflow:job:sink:0:4:1", ""),
        ),  # before the server's transaction id was kept
        (
            KAFKA_COMMITTABLES,
            {
                "transactional_id": "t-0-0",
                "slot": 0,
                "sequence": 1,
                "topic": "out",
                "records": [],
                "subtask": 0,
            },
            KafkaCommittable("t-0-0", 0, 1, "out", []),
        ),  # when Kafka committables named their subtask
    ],
    ids=["file-without-directory", "postgres-without-xid", "kafka-with-subtask"],
)
def test_older_dict_layouts_of_a_kind_decode_with_what_they_lacked_filled_in(codec, plain, value):
    assert decode_stored(codec, plain) == value


def test_an_enumerator_state_a_coordinator_kept_as_a_dict_restores_through_the_codec():
    codec, value, plain = KINDS["kafka enumerator state"]
    legacy = msgspec.msgpack.encode(plain)  # the coordinator's bytes before codecs
    assert decode_state(codec, legacy) == value
    assert decode_state(codec, encode_state(codec, value)) == value


def test_before_enumerators_a_static_source_has_nothing_left_to_assign_and_others_refuse():
    assert SEQUENCES.enumerator_state_codec().deserialize(BEFORE_ENUMERATORS, b"") == (
        StaticSplitsState([])
    )
    for codec in (FILES.enumerator_state_codec(), KAFKA_ENUMERATOR_STATES, PLAIN_VALUES):
        with pytest.raises(UnknownVersion):
            codec.deserialize(BEFORE_ENUMERATORS, b"")


@pytest.mark.parametrize("kind", ["range split", "postgres committable", "kafka enumerator state"])
def test_a_version_the_codec_does_not_know_is_refused_naming_it(kind):
    codec, value, _ = KINDS[kind]
    with pytest.raises(UnknownVersion, match=r"up to 2, not 3: .*newer barrierflow"):
        codec.deserialize(3, codec.serialize(value))


def test_a_dict_given_to_a_typed_codec_is_refused_saying_what_to_return():
    codec, _, plain = KINDS["file committable"]
    with pytest.raises(
        TypeError, match=r"expected a FileCommittable, got dict .*FileCommittable\("
    ):
        codec.serialize(plain)


def test_plain_values_are_the_codec_of_a_connector_that_declares_none():
    assert decode_stored(PLAIN_VALUES, encode_stored(PLAIN_VALUES, {"txn": "t", "n": [1]})) == {
        "txn": "t",
        "n": [1],
    }
    assert decode_stored(PLAIN_VALUES, {"txn": "t"}) == {"txn": "t"}  # kept before codecs
    with pytest.raises(TypeError, match=r"not plain values .*Give the connector a codec"):
        PLAIN_VALUES.serialize({"lock": object()})


def test_plain_values_refuse_a_typed_value_which_would_come_back_a_dict():
    _, value, _ = KINDS["file committable"]
    with pytest.raises(TypeError, match=r"is a FileCommittable, not plain .*wraps another"):
        PLAIN_VALUES.serialize(value)


def test_the_golden_savepoint_s_sequence_splits_decode_as_range_splits():
    metadata = decode_metadata((GOLDEN / "_metadata").read_bytes(), str(GOLDEN))
    events = metadata.operator("events")
    assert events is not None and events.coordinator is None  # taken before enumerators
    splits = [
        decode_stored(SEQUENCES.split_codec(), stored)
        for subtask in events.subtasks
        for stored in read_snapshot(subtask.operator_state.data)["splits"][1]
    ]
    assert splits == [RangeSplit(2049, 4000), RangeSplit(7073, 8000)]
