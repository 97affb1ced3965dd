"""One function object handed to two operators: each operator runs a copy of its own, as in
PyFlink (``tests/compat/programs/shared_function.py`` compares the printed sums with
PyFlink's), whether the API hands the function on as it is (``process``) or wrapped (a keyed
``map``). Shared, the second operator's ``open`` pointed both at its keyed state."""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest

from barrierflow import CheckpointingMode, RestartStrategies, StreamExecutionEnvironment
from barrierflow.cluster.job_master import JobMaster
from barrierflow.cluster.job_plan import NO_REST_SERVER
from barrierflow.connectors import DiscardingSink, FileSink, SequenceSource
from barrierflow.datastream.functions import MapFunction
from barrierflow.errors import ConfigurationError
from barrierflow.state import ValueStateDescriptor
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


def _run(env: StreamExecutionEnvironment, name: str) -> None:
    plan = env._plan(name)
    plan.rest = NO_REST_SERVER
    OPENED.clear()
    JobMaster(plan, ThreadDeployer()).run()


def _env(tmp_path) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment().set_parallelism(1)
    env.enable_checkpointing(50, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "checkpoints"))
    env.set_restart_strategy(RestartStrategies.no_restart())  # a failure shows as itself
    return env


def _check_running_sums(records: list[list[int]], moduli: tuple[int, ...]) -> None:
    """Each operator's sums per key: each its value added to the sum before, the last the sum
    of the key's values."""
    sums: dict[tuple[int, int], int] = defaultdict(int)
    for modulus, value, total in sorted(records, key=lambda r: r[2]):
        sums[(modulus, value % modulus)] += value
        assert total == sums[(modulus, value % modulus)], (modulus, value, total)
    assert sums == {
        (m, k): sum(v for v in range(1, N + 1) if v % m == k) for m in moduli for k in range(m)
    }


def test_two_process_operators_given_one_function_object_keep_sums_of_their_own(tmp_path):
    env = _env(tmp_path)
    running_sum = RecordedRunningSum()
    numbers = env.from_source(SequenceSource(1, N), "numbers")
    by_two = numbers.key_by(lambda x: x % 2).process(running_sum).uid("two")
    by_three = numbers.key_by(lambda x: x % 3).process(running_sum).uid("three")
    out = str(tmp_path / "out")
    by_two.map(lambda r: [2, r[1], r[2]]).union(by_three.map(lambda r: [3, r[1], r[2]])).add_sink(
        FileSink(out)
    )
    _run(env, "shared-process")

    assert len(OPENED) == 2 and OPENED[0] != OPENED[1]
    _check_running_sums(read_committed(out), (2, 3))


def test_two_keyed_maps_given_one_function_object_keep_sums_of_their_own(tmp_path):
    env = _env(tmp_path)
    running_sum = RecordedRunningSumMap()
    numbers = env.from_source(SequenceSource(1, N), "numbers")
    by_two = numbers.key_by(lambda x: x % 2).map(running_sum).uid("two")
    by_three = numbers.key_by(lambda x: x % 3).map(running_sum).uid("three")
    out = str(tmp_path / "out")
    by_two.map(lambda r: [2, *r]).union(by_three.map(lambda r: [3, *r])).add_sink(FileSink(out))
    _run(env, "shared-keyed-map")

    assert len(OPENED) == 2 and OPENED[0] != OPENED[1]
    _check_running_sums(read_committed(out), (2, 3))


class HoldsALock(MapFunction):
    def __init__(self):
        self.lock = threading.Lock()

    def map(self, value):
        return value


def test_a_function_that_cannot_be_pickled_is_named_when_the_job_is_planned():
    env = StreamExecutionEnvironment()
    env.from_source(SequenceSource(1, 10), "numbers").map(HoldsALock()).uid("locked").sink_to(
        DiscardingSink()
    )
    with pytest.raises(ConfigurationError, match=r"operator 'locked' \(.*\): its function cannot"):
        env._plan("unpicklable")
