"""A back-pressured job: a keyed count behind a keyed shuffle, then a slow stage (1 ms of work
every 5 records, as in the unaligned-checkpoint issue's benchmark), so buffers pile up on the
shuffle. The source chain and the slow stage log their progress with wall-clock times, so a
test can tell how much was still in flight when a checkpoint completed; a ``Kill`` fault
SIGKILLs the source's process once the latest completed checkpoint stored data in flight.

Run as a script for ``barrierflow run`` (paths and size from the environment), or build it.
Shipped to Spark workers by value (cloudpickle), since ``tests`` is not installed there.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass

import cloudpickle

from barrierflow.common import RestartStrategies, Types
from barrierflow.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ValueStateDescriptor

KEYS = 100


@dataclass(frozen=True)
class Kill:
    """SIGKILL the source's process at the first record >= ``at_value`` read while the latest
    completed checkpoint holds data in flight (or, without ``data_in_flight``, once any
    checkpoint completed); once (``marker``), across attempts."""

    at_value: int
    marker: str
    checkpoint_dir: str
    data_in_flight: bool = True


def latest_completed(checkpoint_dir: str) -> dict | None:
    """The newest completed checkpoint's record in the job's history, if any."""
    for path in sorted(_histories(checkpoint_dir)):
        with contextlib.suppress(OSError, ValueError, KeyError):
            with open(path) as f:
                records = json.load(f)["records"]
            done = [r for r in records if r["status"] == "COMPLETED"]
            if done:
                return max(done, key=lambda r: r["checkpoint_id"])
    return None


def _histories(checkpoint_dir: str) -> list[str]:
    if not os.path.isdir(checkpoint_dir):
        return []
    paths = (
        os.path.join(checkpoint_dir, job, "_history.json") for job in os.listdir(checkpoint_dir)
    )
    return [p for p in paths if os.path.exists(p)]


class SourceProgress(MapFunction):
    """Chained to the source: logs how far it read, and fires the kill."""

    def __init__(self, log_dir: str, kill: Kill | None) -> None:
        self.log_dir = log_dir
        self.kill = kill

    def map(self, value):
        if value % 256 == 0:
            with open(os.path.join(self.log_dir, "source.log"), "a") as f:
                f.write(f"{time.time_ns()} {value}\n")
            kill = self.kill
            if kill is not None and value >= kill.at_value and not os.path.exists(kill.marker):
                latest = latest_completed(kill.checkpoint_dir)
                in_flight = latest is not None and latest["persisted_data"] > 0
                if latest is not None and (in_flight or not kill.data_in_flight):
                    with open(kill.marker, "w") as f:
                        f.write(f"{value} after checkpoint {latest['checkpoint_id']}\n")
                    os.kill(os.getpid(), signal.SIGKILL)
        return value


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield [value % KEYS, value, count]


class SlowStage(MapFunction):
    """1 ms of work every 5 records (for values in ``slow_range`` only); logs its progress."""

    def __init__(self, log_dir: str, slow_range: tuple[int, int] | None = None) -> None:
        self.log_dir = log_dir
        self.slow_range = slow_range

    def open(self, runtime_context):
        self.processed = 0
        self.log = os.path.join(
            self.log_dir, f"slow-{runtime_context.get_index_of_this_subtask()}-{os.getpid()}.log"
        )

    def map(self, record):
        self.processed += 1
        low, high = self.slow_range or (0, float("inf"))
        if self.processed % 5 == 0 and low <= record[1] < high:
            time.sleep(0.001)
        if self.processed % 64 == 0:
            with open(self.log, "a") as f:
                f.write(f"{time.time_ns()} {self.processed}\n")
        return record


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    n: int,
    out_dir: str,
    checkpoint_dir: str,
    log_dir: str,
    conf: dict | None = None,
    kill: Kill | None = None,
    slow_range: tuple[int, int] | None = None,
    interval_ms: int = 200,
    typed: bool = False,
) -> StreamExecutionEnvironment:
    """One source subtask, so each key sees its values in one order in every run. ``typed``:
    the operators declare their output types, as a PyFlink program does, so their buffers (and
    the data in flight an unaligned checkpoint stores) are MessagePack, not pickle."""
    os.makedirs(log_dir, exist_ok=True)
    env.configure(conf or {})
    env.enable_checkpointing(interval_ms)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 200))
    (
        env.from_source(NumberSequenceSource(1, n), "numbers")
        .set_parallelism(1)
        .map(SourceProgress(log_dir, kill), output_type=Types.LONG() if typed else None)
        .set_parallelism(1)
        .uid("source-progress")
        .key_by(lambda v: v % KEYS)
        .process(CountPerKey(), output_type=Types.LIST(Types.LONG()) if typed else None)
        .uid("count")
        .map(SlowStage(log_dir, slow_range))
        .uid("slow")
        .sink_to(FileSink(out_dir))
        .uid("sink")
    )
    return env


class ProgressLogs:
    """The progress the logs of one run show, at a wall-clock time."""

    def __init__(self, log_dir: str) -> None:
        self._source = _read(os.path.join(log_dir, "source.log"))
        self._slow = [
            _read(os.path.join(log_dir, name))
            for name in sorted(os.listdir(log_dir))
            if name.startswith("slow-")
        ]

    def source_read(self, at_ms: float) -> int:
        """The last position the source logged at or before ``at_ms``."""
        return _at(self._source, at_ms)

    def slow_processed(self, at_ms: float) -> int:
        """The records the slow stage's subtasks had logged as processed by ``at_ms``."""
        return sum(_at(log, at_ms) for log in self._slow)


def _read(path: str) -> list[tuple[float, int]]:
    with open(path) as f:
        return [(int(t) / 1e6, int(v)) for t, v in (line.split() for line in f if line.strip())]


def _at(log: list[tuple[float, int]], at_ms: float) -> int:
    i = bisect.bisect_right(log, (at_ms, float("inf")))
    return log[i - 1][1] if i else 0


if __name__ == "__main__":
    environment = StreamExecutionEnvironment().set_parallelism(2)
    build(
        environment,
        int(os.environ["BACKPRESSURED_N"]),
        os.environ["BACKPRESSURED_OUT"],
        os.environ["BACKPRESSURED_CKPT"],
        os.environ["BACKPRESSURED_LOGS"],
        conf=json.loads(os.environ.get("BACKPRESSURED_CONF", "{}")),
    )
    environment.execute("backpressured")
