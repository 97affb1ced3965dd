"""A job whose checkpoints can be made slow or failing on demand, to test checkpoint options.

``SnapshotProbe`` sits in keyed state; pickling it (the asynchronous phase of a snapshot) sleeps
or raises for the first ``times`` snapshots. Shipped to Spark workers by value.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import cloudpickle

from barrierflow.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor
from tests.jobs.odd_even import MAX_PARALLELISM, Throttle


@dataclass(frozen=True)
class Behavior:
    kind: str  # "slow" or "fail"
    times: int
    seconds: float = 0.0


def _claim_turn(directory: str) -> int:
    """The number of snapshots before this one, counted across processes and threads."""
    n = 0
    while True:
        try:
            os.close(os.open(os.path.join(directory, f"turn-{n}"), os.O_CREAT | os.O_EXCL))
            return n
        except FileExistsError:
            n += 1


class SnapshotProbe:
    def __init__(self, directory: str, behavior: Behavior) -> None:
        self.directory = directory
        self.behavior = behavior

    def __reduce__(self):
        if _claim_turn(self.directory) < self.behavior.times:
            if self.behavior.kind == "slow":
                time.sleep(self.behavior.seconds)
            else:
                raise RuntimeError("injected snapshot failure")
        return (SnapshotProbe, (self.directory, self.behavior))


class SumWithProbe(KeyedProcessFunction):
    def __init__(self, directory: str, behavior: Behavior) -> None:
        self.directory = directory
        self.behavior = behavior

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))
        self.probe = runtime_context.get_state(ValueStateDescriptor("probe"))

    def process_element(self, value, ctx):
        if ctx.get_current_key() == 0 and self.probe.value() is None:
            self.probe.update(SnapshotProbe(self.directory, self.behavior))
        t = (self.total.value() or 0) + value
        self.total.update(t)
        yield [ctx.get_current_key(), value, t]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    tmp: str,
    n: int,
    behavior: Behavior,
    interval_ms: int = 100,
    delay_s: float = 0.0001,  # per record: batches of 1,024 take 0.1 s, so do triggers
) -> StreamExecutionEnvironment:
    probe_dir = os.path.join(tmp, "probe")
    os.makedirs(probe_dir, exist_ok=True)
    env.enable_checkpointing(interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(os.path.join(tmp, "ckpt"))
    env.set_max_parallelism(MAX_PARALLELISM)  # both keyed subtasks busy (odd_even.py)
    (
        env.from_source(NumberSequenceSource(1, n), "numbers")
        .map(Throttle(delay_s, None))
        .uid("throttle")
        .key_by(lambda x: x % 2)
        .process(SumWithProbe(probe_dir, behavior))
        .uid("running-sum")
        .sink_to(FileSink(os.path.join(tmp, "out")))
        .uid("sink")
    )
    return env
