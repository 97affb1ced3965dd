"""Reducing and aggregating state, and state with a time to live, over both real backends with
a clock the test sets: expiry, refresh by update type, visibility, per-element list and
per-entry map TTL, through a snapshot and restore, and a state whose TTL changed refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from barrierflow.common import Time
from barrierflow.functions import AggregateFunction
from barrierflow.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from barrierflow.state.backends.hashmap import HeapKeyedStateBackend
from barrierflow.state.backends.rocksdb import RocksDBKeyedStateBackend
from barrierflow.state.key_groups import KeyGroupRange
from barrierflow.state.keyed_state_store import KeyedStateStore
from tests.unit.test_state_backend_contract import Streams

FULL = KeyGroupRange(0, 127)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=["hashmap", "rocksdb"])
def store(request, tmp_path: Path):
    made: list[Any] = []
    clock = Clock()

    def make() -> KeyedStateStore:
        if request.param == "hashmap":
            backend: Any = HeapKeyedStateBackend(128, FULL)
        else:
            backend = RocksDBKeyedStateBackend(128, FULL, str(tmp_path / f"db{len(made)}"),
                                               1 << 20, 1 << 20)  # fmt: skip
        made.append(backend)
        s = KeyedStateStore(backend, clock)
        s.backend, s.clock = backend, clock
        return s

    yield make
    for backend in made:
        backend.dispose()


def ttl(ms: int, **builder: Any) -> StateTtlConfig:
    b = StateTtlConfig.new_builder(Time.milliseconds(ms))
    for method in builder.get("calls", ()):
        getattr(b, method)()
    return b.build()


def at(s: KeyedStateStore, key: Any) -> KeyedStateStore:
    s.backend.key_context.key = key
    return s


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value, acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


def test_reducing_and_aggregating_state_combine_what_is_added_per_key(store):
    s = store()
    total = s.get_reducing_state(ReducingStateDescriptor("total", lambda a, b: a + b))
    mean = s.get_aggregating_state(AggregatingStateDescriptor("mean", Average()))
    for key, value in [("a", 1), ("b", 10), ("a", 2), ("a", 6)]:
        at(s, key)
        total.add(value)
        mean.add(value)
    at(s, "a")
    assert (total.get(), mean.get()) == (9, 3.0)
    at(s, "b")
    assert (total.get(), mean.get()) == (10, 10.0)
    total.clear()
    assert total.get() is None and at(s, "c") and mean.get() is None


def test_a_value_expires_its_time_to_live_after_its_last_write(store):
    s = store()
    desc = ValueStateDescriptor("v")
    desc.enable_time_to_live(ttl(100))
    state = at(s, "k").get_state(desc)
    state.update("x")
    s.clock.now += 99
    assert state.value() == "x"  # a read does not refresh (OnCreateAndWrite)
    state.update("y")
    s.clock.now += 99
    assert state.value() == "y"
    s.clock.now += 1
    assert state.value() is None


def test_on_read_and_write_a_read_refreshes_and_expired_values_can_be_returned_once(store):
    s = store()
    refreshed = ValueStateDescriptor("refreshed")
    refreshed.enable_time_to_live(ttl(100, calls=["update_ttl_on_read_and_write"]))
    lenient = ValueStateDescriptor("lenient")
    lenient.enable_time_to_live(ttl(100, calls=["return_expired_if_not_cleaned_up"]))
    at(s, "k")
    a, b = s.get_state(refreshed), s.get_state(lenient)
    a.update(1)
    b.update(2)
    s.clock.now += 60
    assert a.value() == 1
    s.clock.now += 60
    assert a.value() == 1  # alive: the read at +60 refreshed it
    assert b.value() == 2  # expired, not cleaned up yet: returned, and cleaned
    assert b.value() is None


def test_list_elements_and_map_entries_expire_one_by_one(store):
    s = store()
    elements = ListStateDescriptor("elements")
    elements.enable_time_to_live(ttl(100))
    entries = MapStateDescriptor("entries")
    entries.enable_time_to_live(ttl(100))
    at(s, "k")
    lst, mp = s.get_state(elements), s.get_state(entries)
    lst.add("old")
    mp.put("old", 1)
    s.clock.now += 50
    lst.add("new")
    mp.put("new", 2)
    s.clock.now += 60
    assert lst.get() == ["new"]
    assert dict(mp.items()) == {"new": 2} and not mp.contains("old") and not mp.is_empty()
    s.clock.now += 50
    assert lst.get() == [] and mp.is_empty()


def test_time_to_live_survives_a_snapshot_and_restore(store, tmp_path):
    s = store()
    desc = ValueStateDescriptor("v")
    desc.enable_time_to_live(ttl(100))
    at(s, "k").get_state(desc).update("x")
    streams = Streams(tmp_path)
    handles = s.backend.snapshot(1)(streams)
    restored = store()
    restored.backend.restore(handles, streams)
    restored.clock.now = s.clock.now + 99
    assert at(restored, "k").get_state(desc).value() == "x"
    restored.clock.now += 1
    assert restored.get_state(desc).value() is None


def test_a_state_written_without_ttl_is_refused_when_read_with_one(store):
    s = store()
    at(s, "k").get_state(ValueStateDescriptor("v")).update("plain")
    with_ttl = ValueStateDescriptor("v")
    with_ttl.enable_time_to_live(ttl(100))
    again = KeyedStateStore(s.backend, s.clock)
    with pytest.raises(ValueError, match="'v' is declared with a time to live"):
        again.get_state(with_ttl).value()


def test_bad_descriptors_and_ttl_configurations_are_named():
    with pytest.raises(TypeError, match="ReducingStateDescriptor 'r' needs"):
        ReducingStateDescriptor("r", None)
    with pytest.raises(TypeError, match="AggregatingStateDescriptor 'a' needs"):
        AggregatingStateDescriptor("a", object())
    with pytest.raises(ValueError, match="must be positive"):
        StateTtlConfig.new_builder(Time.seconds(0))
    with pytest.raises(TypeError, match="StateTtlConfig"):
        ValueStateDescriptor("v").enable_time_to_live(60)
