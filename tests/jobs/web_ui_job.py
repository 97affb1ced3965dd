"""A job for the web UI, REST and metrics tests: numbers read at a bounded pace, a keyed count
behind a key-group shuffle, a sink; it runs until it is canceled, checkpointing every
``interval_ms``. Shipped to Spark workers by value (cloudpickle), since ``tests`` is not
installed there.
"""

from __future__ import annotations

import time

import cloudpickle

from barrierflow.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor

KEYS = 1000


class Paced(MapFunction):
    """About ``per_second`` records a second, so the job runs until it is canceled."""

    def __init__(self, per_second: int) -> None:
        self.per_second = per_second

    def map(self, value):
        if value % 100 == 0:
            time.sleep(100 / self.per_second)
        return value


class CountPerKey(KeyedProcessFunction):
    """Also a user metric of each kind: records counted, their rate, the largest value."""

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        group = runtime_context.get_metrics_group().add_group("counting")
        self.counted = group.counter("counted")
        self.rate = group.meter("rate", time_span_in_seconds=5)
        self.largest = 0
        group.gauge("largest", lambda: self.largest)

    def process_element(self, value, ctx):
        self.counted.inc()
        self.rate.mark_event()
        self.largest = max(self.largest, value)
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield (value % KEYS, count)


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    checkpoint_dir: str,
    savepoint_dir: str,
    interval_ms: int = 300,
    per_second: int = 20_000,
) -> StreamExecutionEnvironment:
    env.configure({"rest.port": 0, "execution.checkpointing.savepoint-dir": savepoint_dir})
    env.enable_checkpointing(interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    (
        env.from_source(NumberSequenceSource(1, 10**12), "numbers")
        .set_parallelism(1)
        .map(Paced(per_second))
        .name("paced")
        .key_by(lambda v: v % KEYS)
        .process(CountPerKey())
        .name("count per key")
        .set_parallelism(2)
        .sink_to(DiscardingSink())
        .name("discard")
        .set_parallelism(2)
    )
    return env
