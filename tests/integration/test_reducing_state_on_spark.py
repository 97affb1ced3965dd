"""ReducingState and AggregatingState (the sum with a time to live) in a checkpointed job on
Spark that fails once after a checkpoint completed: the restored state goes on counting, and the
committed output is what a failure-free run gives."""

from __future__ import annotations

import os
from collections import defaultdict

import cloudpickle
import pytest

from barrierflow.common import RestartStrategies, Time
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import AggregateFunction, KeyedProcessFunction
from barrierflow.datastream.state import (
    AggregatingStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
)
from tests.jobs.odd_even import Fault, Throttle, read_committed

pytestmark = pytest.mark.spark

N = 10_000  # as the fault suite: enough batches for checkpoints to complete mid-stream
KEYS = 5


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class CountAndSum(KeyedProcessFunction):
    """Per key: [key, value, count so far (AggregatingState), sum so far (ReducingState)]."""

    def open(self, runtime_context):
        total = ReducingStateDescriptor("sum", lambda a, b: a + b)
        total.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
        self.total = runtime_context.get_reducing_state(total)
        self.count = runtime_context.get_aggregating_state(
            AggregatingStateDescriptor("count", Count())
        )

    def process_element(self, value, ctx):
        self.total.add(value)
        self.count.add(value)
        yield [ctx.get_current_key(), value, self.count.get(), self.total.get()]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_reducing_and_aggregating_state_count_and_sum_per_key_across_a_restore(
    spark, tmp_path, backend
):
    ckpt, out, fired = tmp_path / "ckpt", tmp_path / "out", tmp_path / "fired"
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.configure({"state.backend.type": backend})
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(ckpt))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 200))
    fault = Fault("raise", N // 2, str(fired), str(ckpt))
    (
        env.from_source(NumberSequenceSource(1, N), "numbers")
        .map(Throttle(0.0003, fault))
        .key_by(lambda v: v % KEYS)
        .process(CountAndSum())
        .uid("count-and-sum")
        .sink_to(FileSink(str(out)))
    )
    env.execute("reducing-state")

    assert os.path.exists(fired)  # it failed once, after a checkpoint, and restored
    records = read_committed(str(out))
    assert sorted(r[1] for r in records) == list(range(1, N + 1))
    by_key = defaultdict(list)
    for key, value, count, total in records:
        assert key == value % KEYS
        by_key[key].append((count, value, total))
    expected = {k: [v for v in range(1, N + 1) if v % KEYS == k] for k in range(KEYS)}
    for key, steps in by_key.items():
        steps.sort()
        assert [count for count, _, _ in steps] == list(range(1, len(expected[key]) + 1))
        previous = 0
        for count, value, total in steps:
            assert total == previous + value, f"key {key}, count {count}"
            previous = total
        assert previous == sum(expected[key])
    assert sorted(by_key) == list(range(KEYS))
