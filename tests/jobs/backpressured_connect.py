"""A back-pressured job with two inputs: two keyed streams of numbers connected into a slow
keyed co-process function (1 ms of work every 5 records), so buffers pile up on both of its
inputs and an unaligned checkpoint stores data in flight into each.

The function counts, per key, the records of each input and emits ``[input, key, value,
count]``; each input comes from one source subtask, so every key sees each input's values in
one order in every run and the output is the same whatever the interleaving. A record
restored into the wrong input, or twice, changes it. A ``Fail`` fault kills the process (or
raises) once the latest completed checkpoint stored data in flight.

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

import cloudpickle

from barrierflow.common import RestartStrategies
from barrierflow.datastream import KeyedCoProcessFunction, MapFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor
from tests.jobs.backpressured import latest_completed

KEYS = 50
UNALIGNED = {"execution.checkpointing.unaligned.enabled": True}


@dataclass(frozen=True)
class Fail:
    """At the first record >= ``at_value`` read while the latest completed checkpoint holds
    data in flight: SIGKILL the process (``kill``) or raise; once (``marker``)."""

    at_value: int
    marker: str
    checkpoint_dir: str
    kill: bool = True


class FailOnce(MapFunction):
    def __init__(self, fail: Fail | None) -> None:
        self.fail = fail

    def map(self, value):
        fail = self.fail
        if fail is None or value < fail.at_value or value % 64 or os.path.exists(fail.marker):
            return value
        latest = latest_completed(fail.checkpoint_dir)
        if latest is not None and latest["persisted_data"] > 0:
            with open(fail.marker, "w") as f:
                f.write(f"{value} after checkpoint {latest['checkpoint_id']}\n")
            if fail.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"injected failure at {value}")
        return value


class CountPerInput(KeyedCoProcessFunction):
    def open(self, runtime_context):
        self.counts = [runtime_context.get_state(ValueStateDescriptor(f"count{i}")) for i in (1, 2)]
        self.processed = 0

    def _count(self, side: int, value: int, ctx):
        self.processed += 1
        if self.processed % 5 == 0:
            time.sleep(0.001)
        state = self.counts[side]
        count = (state.value() or 0) + 1
        state.update(count)
        return [[side + 1, ctx.get_current_key(), value, count]]

    def process_element1(self, value, ctx):
        return self._count(0, value, ctx)

    def process_element2(self, value, ctx):
        return self._count(1, value, ctx)


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def expected(n: int) -> list[list[int]]:
    """Every record of both inputs with its count per input and key, sorted."""
    out = []
    for side, values in ((1, range(1, n + 1)), (2, range(-1, -n - 1, -1))):
        seen: dict[int, int] = {}
        for v in values:
            key = abs(v) % KEYS
            seen[key] = seen.get(key, 0) + 1
            out.append([side, key, v, seen[key]])
    return sorted(out)


def build(
    env: StreamExecutionEnvironment,
    n: int,
    out_dir: str,
    checkpoint_dir: str,
    conf: dict | None = None,
    fail: Fail | None = None,
    restarts: int = 3,
) -> StreamExecutionEnvironment:
    env.configure(conf or {})
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(
        RestartStrategies.fixed_delay_restart(restarts, 200)
        if restarts
        else RestartStrategies.no_restart()
    )
    first = (
        env.from_source(NumberSequenceSource(1, n), "first")
        .set_parallelism(1)
        .map(FailOnce(fail))
        .set_parallelism(1)
        .uid("fail")
    )
    second = (
        env.from_source(NumberSequenceSource(1, n), "second")
        .set_parallelism(1)
        .map(lambda v: -v)
        .set_parallelism(1)
        .uid("negate")
    )
    (
        first.key_by(lambda v: v % KEYS)
        .connect(second.key_by(lambda v: -v % KEYS))
        .process(CountPerInput())
        .uid("count")
        .sink_to(FileSink(out_dir))
        .uid("sink")
    )
    return env
