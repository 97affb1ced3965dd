"""State of a declared type, over both real backends: what is stored is converted as PyFlink
converts it and a wrong value is refused naming the state; RocksDB stores such values as
MessagePack by their type (pickle without one, or with a time to live), and any reader decodes
any row: after a snapshot, into a job that declares another type or none, into the heap."""

from __future__ import annotations

import pickle

import msgspec
import pytest

from barrierflow.common import Time, Types
from barrierflow.common.typeinfo import ConfigurationError
from barrierflow.common.types import Row
from barrierflow.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from barrierflow.state.keyed_state_store import KeyedStateStore
from barrierflow.state.schema_evolution import IncompatibleStateError
from barrierflow.state.value_codec import TYPED_VALUE, ValueCodec, codec_for, decode_value
from tests.unit.state.test_state_backend_contract import BACKENDS, Streams, factory

__all__ = ["factory"]  # the contract suite's fixture: a backend of each kind, disposed after

PAIR = Types.TUPLE([Types.STRING(), Types.LONG()])


@pytest.fixture(params=BACKENDS)
def store(request, factory):
    def make() -> KeyedStateStore:
        backend = factory(request.param).backend
        s = KeyedStateStore(backend)
        s.backend = backend
        backend.key_context.key = "k"
        return s

    return make


def test_stored_values_of_the_type_read_back_as_stored_as_from_pyflinks_state_cache(store):
    s = store()
    ratio = s.get_state(ValueStateDescriptor("ratio", Types.FLOAT()))
    ratio.update(0.1)
    assert ratio.value() == 0.1  # not its 32-bit rounding: PyFlink hands back what was stored
    pairs = s.get_state(ListStateDescriptor("pairs", PAIR))
    pairs.add(("a", 1))
    pairs.update([("b", 2), ("c", 3)])
    assert pairs.get() == [("b", 2), ("c", 3)] and all(type(p) is tuple for p in pairs.get())
    rows = s.get_state(MapStateDescriptor("m", Types.FLOAT(), Types.ROW([Types.INT()])))
    rows.put(0.1, Row(7))
    assert rows.contains(0.1) and rows.get(0.1) == Row(7) and list(rows) == [0.1]
    ratio.update(None)
    assert ratio.value() is None


def test_a_value_that_cannot_be_of_the_type_is_refused_naming_the_state(store):
    s = store()
    count = s.get_state(ValueStateDescriptor("count", Types.LONG()))
    with pytest.raises(TypeError, match="state 'count': 'seven' \\(str\\) is not a LONG"):
        count.update("seven")
    count.update(7)
    with pytest.raises(TypeError, match=r"state 'count': 7\.0 \(float\)"):
        count.update(7.0)
    assert count.value() == 7 and type(count.value()) is int  # a refused value is not stored
    with pytest.raises(TypeError, match="state 'count': 9223372036854775808 \\(int\\)"):
        count.update(2**63)  # an int, beyond a LONG
    with pytest.raises(TypeError, match="state 'count': -9223372036854775809 \\(int\\)"):
        count.update(-(2**63) - 1)
    with pytest.raises(TypeError, match="state 'count': True \\(bool\\)"):
        count.update(True)
    count.update(2**63 - 1)
    count.update(-(2**63))
    assert count.value() == -(2**63)
    seen = s.get_state(ListStateDescriptor("seen", Types.INT()))
    with pytest.raises(TypeError, match=r"state 'seen': 1\.5 \(float\)"):
        seen.add(1.5)
    seen.add(-(2**31))
    assert list(seen.get()) == [-(2**31)]
    total = s.get_reducing_state(ReducingStateDescriptor("total", lambda a, b: a + b, Types.INT()))
    total.add(2**31 - 1)
    with pytest.raises(TypeError, match="state 'total'"):
        total.add(1)  # the sum overflows INT
    with pytest.raises(ConfigurationError, match=r"state 'bad'.*Types\.INT"):
        ValueStateDescriptor("bad", int)


@pytest.mark.parametrize("name, bits", [("BYTE", 8), ("SHORT", 16), ("INT", 32), ("LONG", 64)])
def test_integers_are_checked_against_their_types_bounds(store, name, bits):
    # The writers test a plain int's range inline and send the rest to the full check: each
    # type's own bounds hold on both paths, for value and list state, small values and wide.
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    s = store()
    value = s.get_state(ValueStateDescriptor("v", getattr(Types, name)()))
    listed = s.get_state(ListStateDescriptor("l", getattr(Types, name)()))
    edges = {0, 2**30 - 1, -(2**30) + 1, 2**30, -(2**30), 2**31 - 1, -(2**31), low, high}
    for v in sorted(edges):
        if low <= v <= high:
            value.update(v)
            listed.add(v)
            assert value.value() == v
        else:
            with pytest.raises(TypeError, match=f"state 'v': {v} \\(int\\)"):
                value.update(v)
            with pytest.raises(TypeError, match=f"state 'l': {v} \\(int\\)"):
                listed.add(v)
    assert listed.get() == [v for v in sorted(edges) if low <= v <= high]
    for v in (low - 1, high + 1):
        with pytest.raises(TypeError, match=f"state 'v': {v} \\(int\\)"):
            value.update(v)
    assert value.value() == max(v for v in edges if low <= v <= high)


def test_ints_that_are_not_plain_ints_none_and_big_ints_take_their_own_paths(store):
    s = store()
    count = s.get_state(ValueStateDescriptor("count", Types.LONG()))
    seen = s.get_state(ListStateDescriptor("seen", Types.INT()))
    with pytest.raises(TypeError, match=r"state 'count': True \(bool\)"):
        count.update(True)  # an int subclass: the full check refuses it
    with pytest.raises(TypeError, match=r"state 'seen': False \(bool\)"):
        seen.add(False)
    count.update(1_764_000_000_000)  # a timestamp in milliseconds: beyond one digit
    assert count.value() == 1_764_000_000_000
    count.update(None)  # clears
    assert count.value() is None
    # BIG_INT has no bounds: any int, however large
    big = s.get_state(ValueStateDescriptor("big", Types.BIG_INT()))
    big.update(2**100)
    assert big.value() == 2**100
    bigs = s.get_state(ListStateDescriptor("bigs", Types.BIG_INT()))
    bigs.add(-(2**70))
    assert list(bigs.get()) == [-(2**70)]


def test_rocksdb_rows_of_a_declared_type_are_messagepack_and_the_rest_pickle(factory):
    backend = factory("rocksdb").backend
    s = KeyedStateStore(backend)
    backend.key_context.key = "k"
    with_ttl = ValueStateDescriptor("ttl", Types.LONG())
    with_ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(60)).build())
    for name, desc in [
        ("typed", ValueStateDescriptor("typed", Types.LONG())),
        ("untyped", ValueStateDescriptor("untyped")),
        ("ttl", with_ttl),
    ]:
        s.get_state(desc).update(41)
        (row,) = backend._tables[name].db.values()
        assert row[0] == (TYPED_VALUE if name == "typed" else 0x80), name
        assert s.get_state(desc).value() == 41


def test_any_reader_decodes_any_row_after_a_snapshot(factory, tmp_path):
    """Written typed in RocksDB; read back untyped, and from the heap; another type is
    refused."""
    source = factory("rocksdb-incremental").backend
    s = KeyedStateStore(source)
    source.key_context.key = "k"
    s.get_state(ValueStateDescriptor("pair", PAIR)).update(("a", 1))
    s.get_state(MapStateDescriptor("m", Types.STRING(), Types.DOUBLE())).put("x", 2)
    streams = Streams(tmp_path)
    handles = source.snapshot(1)(streams)
    for kind in ("rocksdb-incremental", "hashmap"):
        target = factory(kind).backend
        target.restore(handles, streams)
        target.key_context.key = "k"
        r = KeyedStateStore(target)
        assert r.get_state(ValueStateDescriptor("pair")).value() == ("a", 1), kind
        assert dict(r.get_state(MapStateDescriptor("m")).items()) == {"x": 2.0}, kind
    relabelled = factory("rocksdb-incremental").backend
    relabelled.restore(handles, streams)
    with pytest.raises(IncompatibleStateError, match=r"'pair'.*from TUPLE<STRING,LONG> to LIST"):
        KeyedStateStore(relabelled).get_state(
            ValueStateDescriptor("pair", Types.LIST(Types.STRING()))
        )  # another type: refused (schema evolution allows only what test_schema_evolution has)


def test_codecs_by_descriptor_and_what_messagepack_cannot_hold():
    assert codec_for(ValueStateDescriptor("v", PAIR)).typed
    assert codec_for(ListStateDescriptor("l", Types.LONG())).typed  # the list is one row
    assert codec_for(MapStateDescriptor("m", Types.ROW([]), Types.LONG())).typed
    assert not codec_for(MapStateDescriptor("m", Types.LONG(), Types.ROW([Types.INT()]))).typed
    assert not codec_for(ValueStateDescriptor("v")).typed
    codec = ValueCodec("i")
    big = codec.encode(2**70)
    assert big[0] == 0x80 and codec.decode(big) == 2**70
    assert codec.decode(pickle.dumps("old", protocol=5)) == "old"
    assert decode_value(ValueCodec("t(s,i)").encode(("a", 1))) == ("a", 1)


def test_a_row_that_is_not_what_it_says_is_refused():
    with pytest.raises(ValueError, match="unknown encoding"):
        decode_value(b"\x00garbage")
    forged = bytes((TYPED_VALUE, 1)) + b"i" + msgspec.msgpack.encode("not an int")
    with pytest.raises(msgspec.ValidationError):
        decode_value(forged)
    with pytest.raises(ValueError, match="malformed"):
        decode_value(bytes((TYPED_VALUE, 2)) + b"x(" + msgspec.msgpack.encode(1))


def test_broadcast_state_checks_what_is_stored_against_its_descriptors_types():
    from barrierflow.state.broadcast_state import BroadcastStateStore

    rules = MapStateDescriptor("rules", Types.STRING(), Types.FLOAT())
    store = BroadcastStateStore(["rules"])
    store.state(rules).put("a", 0.5)
    assert store.read_only(rules).get("a") == 0.5 and list(store.read_only(rules)) == ["a"]
    with pytest.raises(TypeError, match="state 'rules'"):
        store.state(rules).put(1, 0.5)
    with pytest.raises(TypeError, match="state 'rules'"):
        store.state(rules).put_all({"b": "not a float"})
    assert not store.read_only(rules).contains("b")
    with pytest.raises(RuntimeError, match="read-only"):
        store.read_only(rules).put("b", 1.0)


def test_what_a_typed_row_could_not_be_read_back_as_is_refused_or_pickled(store):
    s = store()
    numbers = s.get_state(ValueStateDescriptor("numbers", Types.LIST(Types.LONG())))
    with pytest.raises(TypeError, match="state 'numbers'"):
        numbers.update(bytearray(b"ab"))  # bytes, not a list of LONGs
    small = s.get_state(ListStateDescriptor("small", Types.FLOAT()))
    with pytest.raises(TypeError, match="state 'small'"):
        small.add(1e300)  # beyond a 32-bit float, as update() refuses it
    text = s.get_state(ValueStateDescriptor("text", Types.STRING()))
    text.update("a\ud800")  # MessagePack cannot hold a lone surrogate: pickled
    assert text.value() == "a\ud800"
