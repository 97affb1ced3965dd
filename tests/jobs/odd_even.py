"""The seed documents' odd/even running-sum job, with optional injected faults, and checks.

Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import cloudpickle

from barrierflow.common import RestartStrategies
from barrierflow.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor

# Keys 0 and 1 fall to key groups 0 and 44 of 128, both owned by subtask 0 at parallelism 2:
# the jobs would run one busy keyed subtask and one idle. With 16 key groups they fall to key
# groups 0 and 12, owned by subtasks 0 and 1 at parallelism 2 (0 and 2 at 3), so both
# subtasks count, checkpoint and commit (tests/unit/test_job_keys.py).
MAX_PARALLELISM = 16


class RunningSum(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):
        t = (self.total.value() or 0) + value
        self.total.update(t)
        yield [ctx.get_current_key(), value, t]


@dataclass(frozen=True)
class Fault:
    """Fail once, at the first record >= ``at_value`` seen after a checkpoint completed."""

    # "kill" (SIGKILL of the process), "raise", "corrupt" (newest _metadata, raise), or
    # "poison": the record ``at_value`` makes the function raise, in every attempt
    kind: str
    at_value: int
    marker: str  # created when the fault fires, so it fires once across attempts
    checkpoint_dir: str
    min_checkpoints: int = 1


class Throttle(MapFunction):
    """Slows the source so that checkpoints complete while the job runs; injects the fault."""

    def __init__(self, delay_s: float, fault: Fault | None) -> None:
        self.delay_s = delay_s
        self.fault = fault

    def map(self, value):
        if self.delay_s:
            time.sleep(self.delay_s)
        fault = self.fault
        if fault is not None and fault.kind == "poison" and value == fault.at_value:
            raise ValueError(f"poison record {value}: refused by the job's Throttle function")
        if (
            fault is not None
            and fault.kind != "poison"
            and value >= fault.at_value
            and value % 50 == 0
            and not os.path.exists(fault.marker)
        ):
            completed = glob.glob(os.path.join(fault.checkpoint_dir, "*", "chk-*", "_metadata"))
            if len(completed) < fault.min_checkpoints:
                # Not yet: slower until a checkpoint completes, so that the input does not run
                # out first (a job's first checkpoint may wait for its sinks' first transactions)
                time.sleep(0.05)
            else:
                with open(fault.marker, "w") as f:
                    f.write(f"{value} pid {os.getpid()}\n")
                if fault.kind == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if fault.kind == "corrupt":
                    newest = max(completed, key=lambda p: int(p.split("chk-")[1].split("/")[0]))
                    with open(newest, "r+b") as f:
                        f.truncate(20)
                raise RuntimeError(f"injected failure at {value}")
        return value


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    n: int,
    out_dir: str,
    checkpoint_dir: str | None,
    interval_ms: int = 100,
    delay_s: float = 0.0,
    fault: Fault | None = None,
    source_parallelism: int | None = None,
    num_retained: int = 1,
    mode: CheckpointingMode = CheckpointingMode.EXACTLY_ONCE,
    state_backend: str = "hashmap",
    conf: dict | None = None,
    sink: Any = None,
) -> StreamExecutionEnvironment:
    """``conf``: more configuration options (Flink keys); ``sink``: instead of
    ``FileSink(out_dir)``, for records ``(key, value, running sum)``."""
    env.configure({"state.backend.type": state_backend, **(conf or {})})
    if checkpoint_dir is not None:
        env.enable_checkpointing(interval_ms, mode)
        env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
        env.get_checkpoint_config().set_num_retained_checkpoints(num_retained)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 200))
    env.set_max_parallelism(MAX_PARALLELISM)
    source = env.from_source(NumberSequenceSource(1, n), "numbers")
    throttled = source.map(Throttle(delay_s, fault))
    if source_parallelism:  # the throttle stays chained to the source
        source.set_parallelism(source_parallelism)
        throttled.set_parallelism(source_parallelism)
    (
        throttled.uid("throttle")
        .key_by(lambda x: x % 2)
        .process(RunningSum())
        .uid("running-sum")
        .add_sink(sink if sink is not None else FileSink(out_dir))
        .uid("sink")
    )
    return env


def read_committed(out_dir: str) -> list[list[int]]:
    """Every record of the visible (committed) part files."""
    records = []
    for path in sorted(glob.glob(os.path.join(out_dir, "part-*"))):
        with open(path) as f:
            records += [json.loads(line) for line in f]
    return records


def check_exactly_once(records: list[list[int]], n: int) -> None:
    """The output a failure-free run could have committed: every input value exactly once,
    each key's sums consistent (each the previous plus the value), the final sums right."""
    values = sorted(r[1] for r in records)
    assert values == list(range(1, n + 1)), _diff(values, n)
    by_key = defaultdict(list)
    for key, value, total in records:
        assert key == value % 2, f"record {[key, value, total]} has the wrong key"
        by_key[key].append((total, value))
    for key, seq in by_key.items():
        seq.sort()
        previous = 0
        for total, value in seq:
            assert total == previous + value, f"key {key}: sum {total} != {previous} + {value}"
            previous = total
        assert previous == sum(v for v in range(1, n + 1) if v % 2 == key)


def _diff(values: list[int], n: int) -> str:
    seen = defaultdict(int)
    for v in values:
        seen[v] += 1
    missing = [v for v in range(1, n + 1) if v not in seen][:10]
    duplicated = [v for v, c in seen.items() if c > 1][:10]
    return f"{len(values)} values for {n} inputs; missing {missing}, duplicated {duplicated}"
