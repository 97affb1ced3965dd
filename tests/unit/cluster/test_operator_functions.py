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
    numbers = env.from_source(SequenceSource(1, N), "numbers")
    by_two = apply(numbers.key_by(lambda x: x % 2), function).map(lambda r: [2, *r])
    by_three = apply(numbers.key_by(lambda x: x % 3), function).map(lambda r: [3, *r])
    out = str(tmp_path / "out")
    by_two.union(by_three).add_sink(FileSink(out))
    plan = env._plan("shared-function")
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


def test_a_function_that_cannot_be_pickled_is_named_before_the_job_is_deployed():
    env = StreamExecutionEnvironment()
    env.from_source(SequenceSource(1, 10), "numbers").map(HoldsALock()).uid("locked").sink_to(
        DiscardingSink()
    )
    plan = env._plan("unpicklable")
    with pytest.raises(ConfigurationError, match=r"operator 'locked' \(.*\): its function cannot"):
        plan.operator_functions()  # what execute() asks once the connectors are checked
