"""Reducing and aggregating state and state with a time to live through snapshots: restored
into one backend and into two halves of the key groups (another parallelism), with their
stamps; a restored state whose TTL declaration changed refused either way; descriptors shipped
with a job (pickled)."""

from __future__ import annotations

import pickle
from typing import Any

import cloudpickle
import pytest

from barrierflow.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from barrierflow.protocol.key_group_range import KeyGroupRange
from barrierflow.state.key_groups import assign_to_key_group
from barrierflow.state.keyed_state_store import KeyedStateStore
from tests.unit.state.test_state_backend_contract import MAX_PARALLELISM, Streams, factory
from tests.unit.state.test_state_ttl import Average, at, store, ttl

__all__ = ["factory", "store"]  # fixtures

LOW, HIGH = KeyGroupRange(0, 63), KeyGroupRange(64, 127)
KEYS = [f"user-{i}" for i in range(40)]


def add(a: int, b: int) -> int:
    return a + b


def descriptors(with_ttl: bool) -> dict[str, Any]:
    made = {
        "value": ValueStateDescriptor("value"),
        "list": ListStateDescriptor("list"),
        "map": MapStateDescriptor("map"),
        "sum": ReducingStateDescriptor("sum", add),
        "mean": AggregatingStateDescriptor("mean", Average()),
    }
    if with_ttl:
        for desc in made.values():
            desc.enable_time_to_live(ttl(100))
    return made


def write(s: KeyedStateStore, desc: dict[str, Any], key: str, n: int) -> None:
    at(s, key)
    s.get_state(desc["value"]).update(n)
    s.get_state(desc["list"]).add(n)
    s.get_state(desc["map"]).put(n, key)
    s.get_reducing_state(desc["sum"]).add(n)
    s.get_aggregating_state(desc["mean"]).add(n)


def read(s: KeyedStateStore, desc: dict[str, Any], key: str) -> tuple:
    at(s, key)
    return (
        s.get_state(desc["value"]).value(),
        s.get_state(desc["list"]).get(),
        dict(s.get_state(desc["map"]).items()),
        s.get_reducing_state(desc["sum"]).get(),
        s.get_aggregating_state(desc["mean"]).get(),
    )


NOTHING = (None, [], {}, None, None)


def fill(s: KeyedStateStore, desc: dict[str, Any]) -> None:
    """Per key: two writes 50 ms apart, so list and map hold one old and one new stamp."""
    for i, key in enumerate(KEYS):
        write(s, desc, key, i)
    s.clock.now += 50
    for i, key in enumerate(KEYS):
        write(s, desc, key, i + 100)


def fresh(i: int) -> tuple:
    """What a key of ``fill`` holds once its first writes expired."""
    return (i + 100, [i + 100], {i + 100: KEYS[i]}, 2 * i + 100, (2 * i + 100) / 2)


def whole(i: int) -> tuple:
    return (i + 100, [i, i + 100], {i: KEYS[i], i + 100: KEYS[i]}, 2 * i + 100, (2 * i + 100) / 2)


def test_every_kind_with_ttl_restores_with_its_stamps_into_one_backend(store, tmp_path):
    desc = descriptors(with_ttl=True)
    s = store()
    fill(s, desc)
    streams = Streams(tmp_path)
    handles = s.backend.snapshot(1)(streams)
    restored = store()
    restored.backend.restore(handles, streams)
    s.clock.now += 49  # the first writes are 99 ms old
    assert [read(restored, desc, key) for key in KEYS] == [whole(i) for i in range(len(KEYS))]
    s.clock.now += 1
    assert [read(restored, desc, key) for key in KEYS] == [fresh(i) for i in range(len(KEYS))]
    s.clock.now += 50
    assert all(read(restored, desc, key) == NOTHING for key in KEYS)


@pytest.mark.parametrize("with_ttl", [True, False], ids=["ttl", "no-ttl"])
def test_restored_into_two_halves_each_key_is_in_its_own_half_with_its_stamps(
    store, tmp_path, with_ttl
):
    desc = descriptors(with_ttl)
    s = store()
    fill(s, desc)
    streams = Streams(tmp_path)
    handles = s.backend.snapshot(1)(streams)
    low, high = store(LOW), store(HIGH)
    low.backend.restore(handles, streams)
    high.backend.restore(handles, streams)
    s.clock.now += 50  # the first writes have expired, if they can
    for i, key in enumerate(KEYS):
        owner, other = (low, high) if assign_to_key_group(key, MAX_PARALLELISM) in LOW else (
            high, low)  # fmt: skip
        assert read(owner, desc, key) == (fresh(i) if with_ttl else whole(i))
        assert read(other, desc, key) == NOTHING


def test_two_halves_restored_into_one_backend_keep_their_stamps(store, tmp_path):
    desc = descriptors(with_ttl=True)
    low, high = store(LOW), store(HIGH)
    for i, key in enumerate(KEYS):
        half = low if assign_to_key_group(key, MAX_PARALLELISM) in LOW else high
        write(half, desc, key, i)
    streams = Streams(tmp_path)
    handles = low.backend.snapshot(1)(streams) + high.backend.snapshot(2)(streams)
    merged = store()
    merged.backend.restore(handles, streams)
    low.clock.now += 99
    assert [read(merged, desc, key)[3] for key in KEYS] == list(range(len(KEYS)))
    low.clock.now += 1
    assert all(read(merged, desc, key) == NOTHING for key in KEYS)


def restore_one(store, tmp_path, written: StateDescriptor, write_it) -> KeyedStateStore:
    s = store()
    at(s, "k")
    write_it(s.get_state(written))
    streams = Streams(tmp_path)
    handles = s.backend.snapshot(1)(streams)
    restored = store()
    restored.backend.restore(handles, streams)
    return restored


WRITES = {
    "value": (ValueStateDescriptor, lambda state: state.update(1)),
    "falsy-value": (ValueStateDescriptor, lambda state: state.update(0)),
    "list": (ListStateDescriptor, lambda state: state.add(1)),
    "map": (MapStateDescriptor, lambda state: state.put("a", 1)),
}


@pytest.mark.parametrize("kind", WRITES)
@pytest.mark.parametrize("written_with_ttl", [True, False], ids=["was-ttl", "was-plain"])
def test_a_restored_state_whose_ttl_was_enabled_or_disabled_is_refused_naming_it(
    store, tmp_path, kind, written_with_ttl
):
    make, write_it = WRITES[kind]
    before, now = make(f"my-{kind}"), make(f"my-{kind}")
    (before if written_with_ttl else now).enable_time_to_live(ttl(100))
    restored = restore_one(store, tmp_path, before, write_it)
    declared, held = ("without", "with") if written_with_ttl else ("with", "without")
    with pytest.raises(
        ValueError,
        match=f"state 'my-{kind}' is declared {declared} a time to live, but the restored "
        f"snapshot holds it {held} one",
    ):
        restored.get_state(now)
    assert restored.get_state(before) is not None  # as it was declared: restored


def test_a_reducing_state_restored_with_its_ttl_removed_is_refused(store, tmp_path):
    before = ReducingStateDescriptor("sum", add)
    before.enable_time_to_live(ttl(100))
    restored = restore_one(store, tmp_path, before, lambda state: state.update(1))
    with pytest.raises(ValueError, match="state 'sum' is declared without a time to live"):
        restored.get_reducing_state(ReducingStateDescriptor("sum", add))


def test_a_state_nothing_was_stored_in_may_be_declared_either_way(store):
    s = store()
    s.get_state(ValueStateDescriptor("a"))
    with_ttl = ValueStateDescriptor("a")
    with_ttl.enable_time_to_live(ttl(100))
    assert KeyedStateStore(s.backend, s.clock).get_state(with_ttl).value() is None


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_descriptors_ship_with_the_job_with_their_function_and_ttl(store, dumps):
    desc = descriptors(with_ttl=True)
    desc["lambda"] = ReducingStateDescriptor("lambda", lambda a, b: a * b)
    desc["lambda"].enable_time_to_live(ttl(100, calls=["update_ttl_on_read_and_write"]))
    if dumps is pickle.dumps:
        del desc["lambda"]  # plain pickle ships functions by name only
    shipped = pickle.loads(dumps(desc))
    for name, d in desc.items():
        assert (shipped[name].name, shipped[name].ttl) == (d.name, d.ttl)
    s = store()
    fill(s, shipped)
    assert read(s, shipped, KEYS[3]) == whole(3)
    if "lambda" in shipped:
        product = s.get_reducing_state(shipped["lambda"])
        product.add(3)
        product.add(4)
        assert product.get() == 12
