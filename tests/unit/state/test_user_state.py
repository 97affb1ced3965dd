"""The state a keyed function gets is PyFlink's: a MapState with ``state[key] = value`` and
the rest of its dunder protocol, a ListState with ``add_all`` and iteration, in both backends,
typed or not, with or without TTL; broadcast state has the map protocol too."""

from __future__ import annotations

import pytest

from barrierflow.common import Time, Types
from barrierflow.datastream.functions.one_input import AggregateFunction
from barrierflow.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from barrierflow.state.broadcast_state import BroadcastStateStore
from tests.unit.state.test_state_ttl import at, factory, store  # noqa: F401


def _map_descriptor(kind: str) -> MapStateDescriptor:
    descriptor = (
        MapStateDescriptor("m", Types.STRING(), Types.INT())
        if kind == "typed"
        else (MapStateDescriptor("m"))
    )
    if kind == "ttl":
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(60)).build())
    return descriptor


@pytest.mark.parametrize("kind", ["untyped", "typed", "ttl"])
def test_a_map_state_takes_pyflinks_dunder_protocol(store, kind):  # noqa: F811
    s = at(store(), "key")
    state = s.get_state(_map_descriptor(kind))
    assert isinstance(state, MapState)
    state["a"] = 1
    state["b"] = 2
    assert state["a"] == 1 and state["missing"] is None
    assert "a" in state and "missing" not in state
    del state["a"]
    assert sorted(state) == ["b"] and dict(state.items()) == {"b": 2}
    state.put_all({"c": 3})
    assert sorted(state.keys()) == ["b", "c"] and not state.is_empty()


def test_a_typed_map_state_checks_what_is_set_by_subscript(store):  # noqa: F811
    state = at(store(), "key").get_state(_map_descriptor("typed"))
    with pytest.raises(TypeError, match="'m'"):
        state["a"] = "not an int"


def test_a_list_state_adds_all_and_iterates(store):  # noqa: F811
    s = at(store(), "key")
    state = s.get_state(ListStateDescriptor("l"))
    assert isinstance(state, ListState)
    state.add(1)
    state.add_all([2, 3])
    assert list(state) == [1, 2, 3]


def test_value_reducing_and_aggregating_states_are_pyflinks_classes(store):  # noqa: F811
    class Average(AggregateFunction):
        def create_accumulator(self):
            return (0, 0)

        def add(self, value, acc):
            return acc[0] + value, acc[1] + 1

        def get_result(self, acc):
            return acc[0] / acc[1]

    s = at(store(), "key")
    value = s.get_state(ValueStateDescriptor("v"))
    value.update(5)
    assert isinstance(value, ValueState) and value.value() == 5
    summed = s.get_reducing_state(ReducingStateDescriptor("r", lambda a, b: a + b))
    summed.add(2)
    summed.add(3)
    assert isinstance(summed, ReducingState) and summed.get() == 5
    average = s.get_aggregating_state(AggregatingStateDescriptor("a", Average()))
    average.add(1)
    average.add(3)
    assert isinstance(average, AggregatingState) and average.get() == 2


def test_broadcast_state_takes_the_map_protocol_and_stays_read_only_where_it_is():
    broadcast = BroadcastStateStore(["rules"])
    writable = broadcast.state(MapStateDescriptor("rules", Types.STRING(), Types.INT()))
    writable["limit"] = 10
    assert writable["limit"] == 10 and "limit" in writable
    read_only = broadcast.read_only("rules")
    assert read_only["limit"] == 10 and list(read_only) == ["limit"]
    with pytest.raises(RuntimeError, match="read-only in process_element"):
        read_only["limit"] = 11
    with pytest.raises(RuntimeError, match="read-only in process_element"):
        del read_only["limit"]
    del writable["limit"]
    assert "limit" not in read_only
