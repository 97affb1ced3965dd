"""The job ``bench/rescale.py`` rescales: a keyed running count over K keys whose every output
record carries the processing time it was made at, into an exactly-once ``FileSink``.

    numbers 1..N (one reader) -> Pace -> key_by(v % K) -> Count -> Stamp -> FileSink

- ``Pace`` lets the first K values through at full speed, so that every key has its state
  before the first rescale (the state a rescale moves is the K keys'), then holds the input
  to about ``rate`` values a second, so that the output stays small while the bench rescales.
- ``Count`` is the keyed state: one count per key, emitted with each value.
- ``Stamp`` adds ``time.time()`` and its vertex's parallelism after the keyed operator: the
  sink's committed records then tell when each was processed and by which parallelism, and
  the largest gap between their stamps around a rescale is its downtime (issue 36's
  definition), measured from what was committed and not from what the job reports.

The source and ``Pace`` run at parallelism 1 of their own: a rescale of the job's default
parallelism moves the keyed count, its stamp and the sink, and the input stays one sequence,
so that what a stop-with-savepoint committed is exactly the values 1..M
(``scale_figures.check_keyed_counts``).

Shipped to Spark's workers by value (cloudpickle), since ``bench`` is not installed there.
"""

from __future__ import annotations

import glob
import json
import os
import time

import cloudpickle

from barrierflow.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor

SLEEP_S = 0.001


class Pace(MapFunction):
    """Full speed up to ``fill``, then a 1 ms sleep every ``every`` values."""

    def __init__(self, fill: int, every: int) -> None:
        self.fill = fill
        self.every = every

    def map(self, value):
        if value > self.fill and value % self.every == 0:
            time.sleep(SLEEP_S)
        return value


class Count(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield [ctx.get_current_key(), value, count]


class Stamp(MapFunction):
    """The record with the time it was processed at and the parallelism that processed it."""

    def open(self, runtime_context):
        self.parallelism = runtime_context.get_number_of_parallel_subtasks()

    def map(self, record):
        return [*record, time.time(), self.parallelism]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def every_for(rate: int) -> int:
    """How many values between two 1 ms sleeps for about ``rate`` values a second."""
    return max(1, round(rate * SLEEP_S))


def build(
    env: StreamExecutionEnvironment,
    keys: int,
    out_dir: str,
    checkpoint_dir: str,
    rate: int,
    interval_ms: int = 1000,
    state_backend: str = "hashmap",
    conf: dict | None = None,
) -> StreamExecutionEnvironment:
    """The job, unbounded in practice (2**62 values): the bench ends it by a stop with a
    savepoint. ``conf``: more configuration (Flink keys)."""
    env.configure({"state.backend.type": state_backend, **(conf or {})})
    env.enable_checkpointing(interval_ms, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    source = env.from_source(NumberSequenceSource(1, 2**62), "numbers").set_parallelism(1)
    paced = source.map(Pace(keys, every_for(rate))).set_parallelism(1).uid("pace")
    (
        paced.key_by(lambda v: v % keys)
        .process(Count())
        .uid("count")
        .map(Stamp())
        .uid("stamp")
        .add_sink(FileSink(out_dir))
        .uid("sink")
    )
    return env


def read_committed(out_dir: str) -> list[list]:
    """Every record of the committed part files (the sink hides what is in progress)."""
    records = []
    for path in sorted(glob.glob(os.path.join(out_dir, "part-*"))):
        with open(path) as f:
            records += [json.loads(line) for line in f]
    return records
