"""Buffers of declared types go as MessagePack, decoded to the declared type; everything else
as pickle; a buffer says which, so any reader decodes it; a hostile signature builds nothing."""

from __future__ import annotations

import pickle

import pytest

from barrierflow.common import Types
from barrierflow.declared_types.msgpack_types import signature
from barrierflow.protocol.buffer_codec import TYPED, BufferEncoder, decode_buffer
from barrierflow.protocol.record_batch import RecordBatch

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


@pytest.mark.parametrize(
    ("type_info", "expected"),
    [
        (Types.LONG(), "i"),
        (PAIR, "t(s,i)"),
        (Types.LIST(Types.DOUBLE()), "l(f)"),
        (Types.TUPLE([Types.BOOLEAN(), Types.LIST(PAIR)]), "t(b,l(t(s,i)))"),
        (Types.ROW([Types.INT()]), None),  # a Row: pickle
        (Types.TUPLE([Types.SQL_DATE()]), None),
        (Types.PICKLED_BYTE_ARRAY(), None),
        (None, None),
    ],
)
def test_signatures_cover_what_messagepack_holds_as_declared(type_info, expected):
    assert signature(type_info) == expected
    assert BufferEncoder(type_info).typed == (expected is not None)


@pytest.mark.parametrize(
    ("type_info", "records"),
    [
        (PAIR, [("a", 1), ("b", None), (None, 2**62)]),
        (Types.DOUBLE(), [0.5, None, 1e300]),
        (Types.LIST(Types.INT()), [[1, 2], [], None]),
        (Types.BOOLEAN(), [True, False]),
    ],
)
def test_typed_buffers_come_back_as_they_went(type_info, records):
    encoder = BufferEncoder(type_info)
    payload = encoder.encode(RecordBatch(records))
    assert payload[0] == TYPED
    assert decode_buffer(payload) == RecordBatch(records)
    timed = decode_buffer(encoder.encode(RecordBatch(records, list(range(len(records))))))
    assert timed == RecordBatch(records, list(range(len(records))))
    assert type(timed.values) is list


def test_tuples_decode_as_tuples_and_take_fewer_bytes_than_pickle():
    records = [(f"word{i}", i) for i in range(1000)]
    payload = BufferEncoder(PAIR).encode(RecordBatch(records))
    decoded = decode_buffer(payload).values
    assert decoded == records and type(decoded[0]) is tuple
    assert len(payload) < len(pickle.dumps(records, protocol=5))


def test_what_messagepack_cannot_hold_goes_as_pickle_and_still_decodes():
    encoder = BufferEncoder(Types.BIG_INT())
    payload = encoder.encode(RecordBatch([1, 2**70]))
    assert payload[0] == 0x80 and decode_buffer(payload) == RecordBatch([1, 2**70])
    untyped = BufferEncoder(None).encode(RecordBatch([{1}], [5]))
    assert decode_buffer(untyped) == RecordBatch([{1}], [5])


def test_buffers_written_before_batches_had_columns_still_decode():
    # channel state of older checkpoints: a pickled list, or a pickled (records, timestamps)
    assert decode_buffer(pickle.dumps([1, 2], protocol=5)) == RecordBatch([1, 2])
    old_timed = pickle.dumps(([1, 2], [7, 9]), protocol=5)
    assert decode_buffer(old_timed) == RecordBatch([1, 2], [7, 9])


def test_a_buffer_that_is_not_what_its_signature_says_is_refused():
    import msgspec

    forged = bytes((TYPED, 1)) + b"i" + msgspec.msgpack.encode(["not an int"])
    with pytest.raises(msgspec.ValidationError):
        decode_buffer(forged)
    for sig in (b"x", b"t(i", b"l(i,s)", b"i)", b"t(i;s)"):
        with pytest.raises((ValueError, IndexError)):
            decode_buffer(bytes((TYPED, len(sig))) + sig + msgspec.msgpack.encode([]))
