"""Reducing and aggregating state, and state with a time to live, over both real backends with
a clock the test sets: expiry, refresh by update type, visibility, per-element list and
per-entry map TTL, through a snapshot and restore, and a state whose TTL changed refused."""

from __future__ import annotations

from typing import Any

import pytest

from barrierflow.common import Time
from barrierflow.datastream.functions.one_input import AggregateFunction
from barrierflow.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.keyed_state_store import KeyedStateStore
from tests.unit.state.test_state_backend_contract import BACKENDS, FULL, Streams, factory

__all__ = ["factory"]  # the contract suite's fixture: a backend of each kind, disposed after


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture(params=BACKENDS)
def store(request, factory):
    """``store(key_group_range)``: a KeyedStateStore over a new backend of the kind under test;
    every store of a test shares one clock."""
    clock = Clock()

    def make(key_group_range: KeyGroupRange = FULL) -> KeyedStateStore:
        backend = factory(request.param, key_group_range).backend
        s = KeyedStateStore(backend, clock)
        s.backend, s.clock = backend, clock
        return s

    return make


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


def test_a_state_without_ttl_calls_the_backends_own_methods_with_nothing_between(store):
    s = store()
    for desc, method in (
        (ValueStateDescriptor("v"), "value"),
        (ListStateDescriptor("l"), "add"),
        (MapStateDescriptor("m"), "put"),
    ):
        assert getattr(s.get_state(desc), method) == getattr(s.backend.get_state(desc), method)


def test_on_read_and_write_a_map_read_refreshes_only_its_entry_and_a_list_read_every_element(
    store,
):
    s = store()
    on_read = ttl(100, calls=["update_ttl_on_read_and_write"])
    entries, elements = MapStateDescriptor("entries"), ListStateDescriptor("elements")
    entries.enable_time_to_live(on_read)
    elements.enable_time_to_live(on_read)
    at(s, "k")
    mp, lst = s.get_state(entries), s.get_state(elements)
    mp.put_all({"read": 1, "unread": 2})
    lst.add("a")
    s.clock.now += 60
    lst.add("b")
    assert mp.get("read") == 1
    assert lst.get() == ["a", "b"]  # refreshes "a" too
    s.clock.now += 60
    assert dict(mp.items()) == {"read": 1}
    assert lst.get() == ["a", "b"]
    s.clock.now += 100
    assert mp.is_empty() and lst.get() == []


def test_on_create_and_write_a_put_refreshes_its_entry_and_reads_refresh_nothing(store):
    s = store()
    entries = MapStateDescriptor("entries")
    entries.enable_time_to_live(ttl(100))
    mp = at(s, "k").get_state(entries)
    mp.put("a", 1)
    mp.put("b", 1)
    s.clock.now += 60
    mp.put("a", 2)
    assert mp.get("b") == 1
    s.clock.now += 60
    assert dict(mp.items()) == {"a": 2}
    s.clock.now += 40
    assert mp.get("a") is None


def test_expired_list_elements_and_map_entries_can_be_returned_once_before_cleanup(store):
    s = store()
    lenient = ttl(100, calls=["return_expired_if_not_cleaned_up"])
    entries, elements = MapStateDescriptor("entries"), ListStateDescriptor("elements")
    entries.enable_time_to_live(lenient)
    elements.enable_time_to_live(lenient)
    at(s, "k")
    mp, lst = s.get_state(entries), s.get_state(elements)
    mp.put("old", 1)
    lst.add("old")
    s.clock.now += 100
    mp.put("new", 2)
    lst.add("new")
    assert dict(mp.items()) == {"old": 1, "new": 2}
    assert lst.get() == ["old", "new"]
    assert dict(mp.items()) == {"new": 2}
    assert lst.get() == ["new"]


def test_reducing_and_aggregating_state_with_ttl_expire_and_start_again_from_nothing(store):
    s = store()
    total = ReducingStateDescriptor("total", lambda a, b: a + b)
    total.enable_time_to_live(ttl(100))
    mean = AggregatingStateDescriptor("mean", Average())
    mean.enable_time_to_live(ttl(100))
    at(s, "k")
    r, a = s.get_reducing_state(total), s.get_aggregating_state(mean)
    r.add(5)
    a.add(5)
    s.clock.now += 60
    r.add(1)  # a write: the sum lives 100 ms from now
    a.add(1)
    s.clock.now += 99
    assert (r.get(), a.get()) == (6, 3.0)
    s.clock.now += 1
    assert (r.get(), a.get()) == (None, None)
    r.add(7)
    a.add(7)
    assert (r.get(), a.get()) == (7, 7.0)


def test_one_name_asked_for_with_another_ttl_is_refused(store):
    s = store()
    plain, with_ttl = ValueStateDescriptor("v"), ValueStateDescriptor("v")
    with_ttl.enable_time_to_live(ttl(100))
    at(s, "k").get_state(plain)
    assert s.get_state(ValueStateDescriptor("v")) is s.get_state(plain)
    with pytest.raises(ValueError, match="state 'v' is requested with time to live"):
        s.get_state(with_ttl)
