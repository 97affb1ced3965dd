"""A job with broadcast state and side outputs, for the fault tests: thresholds per kind are
broadcast (a bounded source of parallelism 1 that ends early), events 1..n are keyed by kind and
judged against their kind's threshold, at once if it is known, else at the end of input (kept in
keyed state until then, with an event-time timer); events of a kind without a threshold go to a
side output. Every event is judged exactly once, whatever the interleaving of the two inputs,
so the output is known in advance (``expected``).

After a restore the thresholds source has ended and reads nothing again: the judgments that
follow are right only if the broadcast state was restored into every subtask. Shipped to Spark
workers by value (cloudpickle).
"""

from __future__ import annotations

from collections import Counter

import cloudpickle

from barrierflow.common import Duration, RestartStrategies, Types, WatermarkStrategy
from barrierflow.datastream import (
    KeyedBroadcastProcessFunction,
    OutputTag,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import ListStateDescriptor, MapStateDescriptor
from tests.jobs.odd_even import Fault, Throttle

KINDS = 5
THRESHOLDS = {0: 2000, 1: 5000, 2: 8000, 3: 11000}  # kind 4 has none: its events go aside
END_OF_INPUT = 2**62  # an event-time timer that fires only when the input ended

RULES = MapStateDescriptor("thresholds", Types.INT(), Types.INT())
UNKNOWN = OutputTag("unknown")


def kind_of(value: int) -> int:
    return value % KINDS


def expected(n: int) -> tuple[Counter, Counter]:
    """(judged, unknown): the multisets a correct run commits."""
    judged, unknown = Counter(), Counter()
    for v in range(1, n + 1):
        threshold = THRESHOLDS.get(kind_of(v))
        if threshold is None:
            unknown[(kind_of(v), v)] += 1
        else:
            judged[(kind_of(v), v, "over" if v > threshold else "ok")] += 1
    return judged, unknown


class Judge(KeyedBroadcastProcessFunction):
    def open(self, runtime_context):
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting"))

    def process_element(self, value, ctx):
        threshold = ctx.get_broadcast_state(RULES).get(ctx.get_current_key())
        if threshold is None:  # not known yet, or never: decided at the end
            self.waiting.add(value)
            ctx.timer_service().register_event_time_timer(END_OF_INPUT)
            return
        yield [ctx.get_current_key(), value, "over" if value > threshold else "ok"]

    def process_broadcast_element(self, rule, ctx):
        kind, threshold = rule
        ctx.get_broadcast_state(RULES).put(kind, threshold)

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        threshold = ctx.get_broadcast_state(RULES).get(key)
        for value in self.waiting.get():
            if threshold is None:
                yield UNKNOWN, [key, value]
            else:
                yield [key, value, "over" if value > threshold else "ok"]
        self.waiting.clear()


def rule_of(i: int) -> tuple[int, int]:
    kind = i - 1
    return kind, THRESHOLDS[kind]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(
    env: StreamExecutionEnvironment,
    n: int,
    out_dir: str,
    checkpoint_dir: str,
    fault: Fault | None = None,
    state_backend: str = "hashmap",
    delay_s: float = 0.0003,
    restarts: int = 3,
) -> StreamExecutionEnvironment:
    env.configure({"state.backend.type": state_backend, "pipeline.auto-watermark-interval": 50})
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(checkpoint_dir)
    env.set_restart_strategy(
        RestartStrategies.fixed_delay_restart(restarts, 200)
        if restarts
        else RestartStrategies.no_restart()
    )
    rules = (
        env.from_source(NumberSequenceSource(1, len(THRESHOLDS)), "rules")
        .set_parallelism(1)
        .map(rule_of)
        .uid("rules")
        .set_parallelism(1)
        .broadcast(RULES)
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(lambda value, _: value)
    judged = (
        env.from_source(NumberSequenceSource(1, n), "events")
        .map(Throttle(delay_s, fault))
        .uid("throttle")
        .assign_timestamps_and_watermarks(strategy)
        .key_by(kind_of)
        .connect(rules)
        .process(Judge())
        .uid("judge")
    )
    judged.sink_to(FileSink(f"{out_dir}/judged")).uid("judged-sink")
    judged.get_side_output(UNKNOWN).sink_to(FileSink(f"{out_dir}/unknown")).uid("unknown-sink")
    return env


def committed(out_dir: str) -> tuple[Counter, Counter]:
    from tests.jobs.odd_even import read_committed

    return tuple(
        Counter(tuple(r) for r in read_committed(f"{out_dir}/{name}"))
        for name in ("judged", "unknown")
    )
