"""The checkpoint metadata file format: framing, integrity checks and a typed (non-pickle) body."""

from __future__ import annotations

import hashlib
import pickle
import struct
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.checkpoint.metadata import (
    FORMAT_VERSION,
    MAGIC,
    CheckpointMetadata,
    CorruptCheckpointError,
    FileHandle,
    IncrementalKeyedHandle,
    InlineHandle,
    KeyGroupsHandle,
    OperatorCoordinatorState,
    OperatorState,
    OperatorSubtaskState,
    SharedFileHandle,
    SubtaskCheckpointStats,
    decode_metadata,
    encode_metadata,
)

PATH = "/ckpt/job-1/chk-7/_metadata"
HEADER = struct.Struct(">8sHQ16s")  # the documented frame: magic, version, length, BLAKE2b-128


def sample_metadata() -> CheckpointMetadata:
    keyed_file = KeyGroupsHandle(0, 63, [(0, 0, 10), (5, 10, 32)], FileHandle("shared/a", 42, "ff"))
    keyed_inline = KeyGroupsHandle(64, 127, [(64, 0, 3)], InlineHandle(b"\x00\x01\x02"))
    return CheckpointMetadata(
        job_id="job-1",
        job_name="odd even",
        checkpoint_id=7,
        trigger_timestamp_ms=1_700_000_000_000,
        completion_timestamp_ms=1_700_000_000_250,
        operators=[
            OperatorState(
                "source-0",
                "Source",
                2,
                128,
                [
                    OperatorSubtaskState(0, InlineHandle(b'{"next": 3}')),
                    OperatorSubtaskState(1, FileHandle("chk-7/op-1", 9000, "abc123")),
                ],
            ),
            OperatorState(
                "sum",
                "Sum",
                2,
                128,
                [
                    OperatorSubtaskState(0, None, [keyed_file]),
                    OperatorSubtaskState(1, None, [keyed_inline]),
                ],
            ),
        ],
        stats=[SubtaskCheckpointStats("v0", 0, 1.5, 20.25, 0.0, 11)],
    )


def frame(body: bytes, version: int = FORMAT_VERSION, magic: bytes = MAGIC) -> bytes:
    digest = hashlib.blake2b(body, digest_size=16).digest()
    return HEADER.pack(magic, version, len(body), digest) + body


def assert_corrupt(data: bytes, reason_part: str) -> CorruptCheckpointError:
    with pytest.raises(CorruptCheckpointError) as caught:
        decode_metadata(data, PATH)
    assert caught.value.path == PATH
    assert PATH in str(caught.value)
    assert reason_part in caught.value.reason
    return caught.value


def test_metadata_round_trips_with_inline_file_and_key_group_handles():
    original = sample_metadata()
    decoded = decode_metadata(encode_metadata(original), PATH)
    assert decoded == original
    subtasks = decoded.operators[0].subtasks
    assert isinstance(subtasks[0].operator_state, InlineHandle)
    assert isinstance(subtasks[1].operator_state, FileHandle)
    assert decoded.operator("sum").subtasks[1].keyed_state[0].offsets == [(64, 0, 3)]
    assert decoded.state_size() == 11 + 9000 + 42 + 3


def test_encoded_metadata_is_framed_by_magic_version_length_and_digest():
    data = encode_metadata(sample_metadata())
    magic, version, length, digest = HEADER.unpack_from(data)
    body = data[HEADER.size :]
    assert (magic, version, length) == (MAGIC, FORMAT_VERSION, len(body))
    assert digest == hashlib.blake2b(body, digest_size=16).digest()


@pytest.mark.parametrize("keep", [0, 1, 8, 10, 33, 34, 35, -100, -1])
def test_truncated_metadata_is_detected_as_corrupt_naming_the_path(keep):
    data = encode_metadata(sample_metadata())
    assert_corrupt(data[:keep], "truncated")


def test_every_flipped_byte_in_the_body_is_detected_as_a_checksum_mismatch():
    data = encode_metadata(sample_metadata())
    for i in range(HEADER.size, len(data)):
        corrupted = bytearray(data)
        corrupted[i] ^= 0x20
        assert_corrupt(bytes(corrupted), "checksum mismatch")


@given(data=st.data())
def test_any_flipped_byte_is_detected_or_leaves_the_metadata_unchanged(data):
    original = sample_metadata()
    encoded = encode_metadata(original)
    position = data.draw(st.integers(0, len(encoded) - 1), label="position")
    mask = data.draw(st.integers(1, 255), label="mask")
    corrupted = bytearray(encoded)
    corrupted[position] ^= mask
    try:
        decoded = decode_metadata(bytes(corrupted), PATH)
    except CorruptCheckpointError as e:
        assert e.path == PATH
    else:  # e.g. the version field lowered to an older version: the body is intact
        assert decoded == original


def test_wrong_magic_is_detected_as_not_a_metadata_file():
    data = encode_metadata(sample_metadata())
    assert_corrupt(b"PK\x03\x04" + data[4:], "not a barrierflow checkpoint metadata file")


def test_newer_format_version_is_detected_and_asks_for_an_upgrade():
    body = encode_metadata(sample_metadata())[HEADER.size :]
    error = assert_corrupt(frame(body, version=FORMAT_VERSION + 1), "upgrade")
    assert f"format version {FORMAT_VERSION + 1}" in error.reason


_unpickled: list[str] = []


def _record_unpickling(what: str) -> str:
    _unpickled.append(what)
    return what


class _Payload:
    def __reduce__(self):
        return (_record_unpickling, ("code ran",))


def test_a_correctly_framed_pickle_body_is_rejected_without_being_unpickled():
    body = pickle.dumps({"metadata": sample_metadata(), "payload": _Payload()}, protocol=5)
    assert_corrupt(frame(body), "undecodable body")
    assert _unpickled == []


def test_a_msgpack_body_with_undeclared_types_is_rejected():
    good = msgspec.to_builtins(sample_metadata())
    bad = {**good, "operators": [{"uid": "x", "name": "y", "parallelism": "two"}]}
    assert_corrupt(frame(msgspec.msgpack.encode(bad)), "undecodable body")
    assert_corrupt(frame(msgspec.msgpack.encode([1, 2, 3])), "undecodable body")
    assert_corrupt(frame(b""), "undecodable body")


def test_a_body_longer_than_declared_is_detected():
    data = encode_metadata(sample_metadata())
    assert_corrupt(data + b"\x00", "body has")


def test_format_version_1_without_handle_tags_still_decodes():
    """What barrierflow 0.1 wrote: the same fields, keyed state handles without a type tag."""
    original = sample_metadata()
    body = msgspec.to_builtins(original, builtin_types=(bytes,))
    for op in body["operators"]:
        for subtask in op["subtasks"]:
            for handle in subtask.get("keyed_state", []):
                assert handle.pop("type") == "key-groups"
    data = frame(msgspec.msgpack.encode(body), version=1)
    assert decode_metadata(data, PATH) == original


def test_an_incremental_handle_round_trips_and_counts_only_its_own_uploads_as_written():
    shared = [
        SharedFileHandle("000007.sst", FileHandle("shared/op-0/3-ab-000007.sst", 1000, "aa"), 3),
        SharedFileHandle("000011.sst", FileHandle("shared/op-0/5-cd-000011.sst", 200, "bb"), 5),
    ]
    handle = IncrementalKeyedHandle(
        0, 127, 5, shared, {"CURRENT": InlineHandle(b"MANIFEST-000012\n")}, {"count": "value"}
    )
    state = OperatorSubtaskState(0, None, [handle])
    metadata = CheckpointMetadata(
        "job", "name", 5, 1, 2, [OperatorState("count", "Count", 1, 128, [state])]
    )
    decoded = decode_metadata(encode_metadata(metadata), PATH)
    assert decoded == metadata
    assert decoded.state_size() == 1000 + 200 + 16
    assert decoded.checkpointed_size() == 200 + 16
    assert decoded.shared_paths() == {s.file.path for s in shared}


def test_channel_state_and_unaligned_stats_round_trip_and_count_in_the_state_size():
    channel = FileHandle("chk-7/count-0-channel", 700, "beef")
    original = CheckpointMetadata(
        job_id="job-1",
        job_name="backpressured",
        checkpoint_id=7,
        trigger_timestamp_ms=1,
        completion_timestamp_ms=2,
        operators=[
            OperatorState(
                "count",
                "Count",
                1,
                128,
                [OperatorSubtaskState(0, None, [], channel_state=channel)],
            )
        ],
        stats=[
            SubtaskCheckpointStats(
                "v1",
                0,
                0.5,
                3.0,
                0.0,
                700,
                processed_data=0,
                unaligned=True,
                persisted_data=690,
                start_delay_ms=4.5,
            )
        ],
    )
    decoded = decode_metadata(encode_metadata(original), PATH)
    assert decoded == original
    assert decoded.operator("count").subtasks[0].channel_state == channel
    assert decoded.state_size() == 700
    (stats,) = decoded.stats
    assert (stats.unaligned, stats.persisted_data, stats.start_delay_ms) == (True, 690, 4.5)


GOLDEN_V2 = Path(__file__).parent / "golden" / "metadata_v2.bin"


def test_format_version_2_as_written_before_coordinator_state_still_decodes():
    """``golden/metadata_v2.bin``: ``sample_metadata()`` as barrierflow wrote it in version 2."""
    data = GOLDEN_V2.read_bytes()
    assert HEADER.unpack_from(data)[1] == 2
    decoded = decode_metadata(data, PATH)
    assert decoded == sample_metadata()
    assert all(op.coordinator is None for op in decoded.operators)


def test_coordinator_state_round_trips_in_its_operators_section():
    metadata = msgspec.structs.replace(
        sample_metadata(),
        operators=[
            msgspec.structs.replace(op, coordinator=OperatorCoordinatorState(b"\x00splits"))
            if op.uid == "source-0"
            else op
            for op in sample_metadata().operators
        ],
    )
    decoded = decode_metadata(encode_metadata(metadata), PATH)
    assert decoded.operator("source-0").coordinator == OperatorCoordinatorState(b"\x00splits", 1)
    assert decoded.operator("sum").coordinator is None


def test_a_coordinator_section_of_a_newer_layout_is_refused_naming_the_operator():
    metadata = sample_metadata()
    op = msgspec.structs.replace(
        metadata.operators[0], coordinator=OperatorCoordinatorState(b"x", format_version=2)
    )
    newer = msgspec.structs.replace(metadata, operators=[op])
    error = assert_corrupt(encode_metadata(newer), "layout version 2")
    assert "'source-0'" in error.reason and "upgrade barrierflow" in error.reason
