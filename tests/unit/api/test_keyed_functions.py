"""map, flat_map and filter on a KeyedStream: a function that opens may declare keyed state,
as in PyFlink; a plain function keeps the plain operator."""

from __future__ import annotations

from barrierflow.api.function_adapters import KeyedFilter, KeyedFlatMap, KeyedMap
from barrierflow.common import Types
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.functions import FilterFunction, FlatMapFunction, MapFunction
from barrierflow.datastream.state import ListStateDescriptor, ValueStateDescriptor
from barrierflow.graph.transformation import TransformationKind
from barrierflow.testing.harness import OperatorHarness, operator


class CountPerKey(MapFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def map(self, value):
        seen = (self.count.value() or 0) + 1
        self.count.update(seen)
        return value[0], seen


class SeenSoFar(FlatMapFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen"))

    def flat_map(self, value):
        self.seen.add(value[1])
        yield from self.seen


class FirstOfKey(FilterFunction):
    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def filter(self, value):
        if self.seen.value():
            return False
        self.seen.update(True)
        return True


def _keyed(fn):
    return OperatorHarness(operator(TransformationKind.PROCESS, fn, key_selector=lambda r: r[0]))


def test_a_keyed_map_function_keeps_state_per_key():
    out = _keyed(KeyedMap(CountPerKey())).process([("a",), ("b",), ("a",), ("a",)])
    assert out == [("a", 1), ("b", 1), ("a", 2), ("a", 3)]


def test_a_keyed_filter_and_flat_map_see_the_keys_state():
    assert _keyed(KeyedFilter(FirstOfKey())).process([("a", 1), ("a", 2), ("b", 3)]) == [
        ("a", 1),
        ("b", 3),
    ]
    seen = _keyed(KeyedFlatMap(SeenSoFar())).process([("a", 1), ("b", 2), ("a", 3)])
    assert seen == [1, 2, 1, 3]


def test_only_functions_that_open_become_keyed_process_functions():
    env = StreamExecutionEnvironment()
    keyed = env.from_collection([("a", 1)]).key_by(lambda r: r[0])
    plain = keyed.map(lambda r: r).get_transformation()
    stateful = keyed.map(CountPerKey(), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
    kept = keyed.filter(FirstOfKey()).get_transformation()
    assert plain.kind is TransformationKind.MAP and plain.key_selector is None
    t = stateful.get_transformation()
    assert t.kind is TransformationKind.PROCESS and t.key_selector is not None
    assert isinstance(t.function, KeyedMap) and t.name == "Map"
    assert kept.output_type is None and kept.kind is TransformationKind.PROCESS
