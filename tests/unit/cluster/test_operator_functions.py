"""One function object handed to two operators: each operator runs a copy of its own, as in
PyFlink (``tests/compat/programs/shared_function.py`` compares the printed sums with
PyFlink's), whether the API hands the function on as it is (``process``) or wrapped (a keyed
``map``). Shared, the second operator's ``open`` pointed both at its keyed state."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest

from barrierflow.client.planning import plan_job
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import NO_REST_SERVER
from barrierflow.cluster.operator_functions import own_functions
from barrierflow.common import RestartStrategies
from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions import MapFunction
from barrierflow.datastream.state import ValueStateDescriptor
from barrierflow.errors import ConfigurationError
from barrierflow.graph.stream_graph import StreamNode
from barrierflow.testing.thread_deployer import ThreadDeployer
from tests.jobs.odd_even import RunningSum, read_committed

N = 2_000
OPENED: list[int] = []  # the id of the function object each operator opened


class RecordedRunningSum(RunningSum):
    def open(self, runtime_context):
        OPENED.append(id(self))
        super().open(runtime_context)


class RecordedRunningSumMap(MapFunction):
    """The running sum as a keyed ``map``, which the API wraps in a ``KeyedMap``."""

    def open(self, runtime_context):
        OPENED.append(id(self))
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def map(self, value):
        total = (self.total.value() or 0) + value
        self.total.update(total)
        return [value, total]


def _check_running_sums(records: list[list[int]]) -> None:
    """Each operator's sums per key: each its value added to the sum before, the last the sum
    of the key's values."""
    sums: dict[tuple[int, int], int] = defaultdict(int)
    for modulus, value, total in sorted(records, key=lambda r: r[2]):
        sums[(modulus, value % modulus)] += value
        assert total == sums[(modulus, value % modulus)], (modulus, value, total)
    assert sums == {
        (m, k): sum(v for v in range(1, N + 1) if v % m == k) for m in (2, 3) for k in range(m)
    }


# How each of the two operators is given the one function object, and its output as
# ``[value, sum]``: as it is (``process``), or wrapped by the API (a keyed ``map``)
APPLIED = {
    "process": (RecordedRunningSum, lambda keyed, f: keyed.process(f).map(lambda r: r[1:])),
    "keyed map": (RecordedRunningSumMap, lambda keyed, f: keyed.map(f)),
}


@pytest.mark.parametrize("applied", APPLIED)
def test_two_operators_given_one_function_object_keep_sums_of_their_own(tmp_path, applied):
    function_type, apply = APPLIED[applied]
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(50, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.set_restart_strategy(RestartStrategies.no_restart())  # a failure shows as itself
    function = function_type()
    numbers = env.from_source(NumberSequenceSource(1, N), "numbers")
    by_two = apply(numbers.key_by(lambda x: x % 2), function).map(lambda r: [2, *r])
    by_three = apply(numbers.key_by(lambda x: x % 3), function).map(lambda r: [3, *r])
    out = str(tmp_path / "out")
    by_two.union(by_three).add_sink(FileSink(out))
    plan = plan_job(env._pipeline("shared-function"))
    plan.rest = NO_REST_SERVER
    OPENED.clear()
    JobMaster(plan, ThreadDeployer()).run()

    assert len(OPENED) == 2 and OPENED[0] != OPENED[1]
    _check_running_sums(read_committed(out))


class HoldsALock(MapFunction):
    def __init__(self):
        self.lock = threading.Lock()

    def map(self, value):
        return value


class Halve(MapFunction):
    def map(self, value):
        return value // 2


def _nodes(env: StreamExecutionEnvironment) -> dict[str, StreamNode]:
    graph = plan_job(env._pipeline("nodes")).graph.job_graph
    return {n.uid: n for v in graph.vertices for n in v.chain}


def test_only_operators_that_reach_an_object_an_earlier_one_reaches_get_a_copy():
    env = StreamExecutionEnvironment()
    numbers = env.from_source(NumberSequenceSource(1, 10), "numbers")
    shared_map, alone, summing = RecordedRunningSumMap(), Halve(), RecordedRunningSum()
    stateless = lambda x: x + 1  # noqa: E731 - code, not state: shared as it is
    numbers.key_by(lambda x: x % 2).map(shared_map).uid("map-1").sink_to(DiscardingSink())
    numbers.key_by(lambda x: x % 3).map(shared_map).uid("map-2").sink_to(DiscardingSink())
    numbers.key_by(lambda x: x % 2).process(summing).uid("sum-1").sink_to(DiscardingSink())
    numbers.map(summing.process_element).uid("bound").sink_to(DiscardingSink())
    plus_2 = numbers.map(alone).uid("alone").map(stateless).uid("plus-1").map(stateless)
    plus_2.uid("plus-2").sink_to(DiscardingSink())
    nodes = _nodes(env)
    functions = own_functions(nodes.values())

    def copied(uid: str) -> bool:
        return functions[uid] is not nodes[uid].function

    # a keyed map wraps the user's function: the second wrapper reaches the same object
    assert not copied("map-1") and copied("map-2")
    assert type(functions["map-2"]) is type(nodes["map-2"].function)
    assert not copied("sum-1") and copied("bound")  # a bound method stands for its object
    assert not any(copied(uid) for uid in ("alone", "plus-1", "plus-2"))


def test_a_shared_function_that_cannot_be_copied_is_named():
    env = StreamExecutionEnvironment()
    numbers = env.from_source(NumberSequenceSource(1, 10), "numbers")
    locked = HoldsALock()
    numbers.map(locked).uid("first").sink_to(DiscardingSink())
    numbers.map(locked).uid("second").sink_to(DiscardingSink())
    with pytest.raises(ConfigurationError, match=r"operator 'second' \(.*\) shares its function"):
        own_functions(_nodes(env).values())
