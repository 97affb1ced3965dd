"""A job of broadcast state and two keyed streams connected, whose operators after the connects
have no uid, for the test that a savepoint taken by an older barrierflow still restores.

Events 1..n are keyed by kind and tallied (count and sum in keyed state) by a keyed broadcast
process function, which holds each kind's threshold in broadcast state; at the end of input
each kind's tally is priced by a keyed co-process function that keeps each kind's price in
keyed state. Thresholds and prices come from small bounded sources that end long before the
events do, so after a restore they come from the state alone: the output (``expected``) is
right only if every state came back under the same uid and name.

``python -m tests.jobs.connected_upgrade DIR`` runs the job slowly and stops it with a
canonical savepoint under DIR (how ``tests/integration/golden/connect_savepoint`` was taken).
Shipped to Spark workers by value (cloudpickle).
"""

from __future__ import annotations

import time

import cloudpickle

from barrierflow.common import Types
from barrierflow.datastream import (
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.state import MapStateDescriptor, ValueStateDescriptor

KINDS = 4
THRESHOLDS = {0: 100, 1: 200, 2: 300, 3: 400}
PRICES = {0: 7, 1: 11, 2: 13, 3: 17}
RULES = MapStateDescriptor("thresholds", Types.INT(), Types.INT())
END_OF_INPUT = 2**62  # an event-time timer that fires only when the input ended


def kind_of(value: int) -> int:
    return value % KINDS


def expected(n: int) -> list[tuple[int, int, int, int, int]]:
    """(kind, count, sum, threshold, price) per kind, sorted: what a correct run ends with."""
    values = range(1, n + 1)
    return sorted(
        (
            k,
            sum(1 for v in values if kind_of(v) == k),
            sum(v for v in values if kind_of(v) == k),
            THRESHOLDS[k],
            PRICES[k],
        )
        for k in range(KINDS)
    )


class Tally(KeyedBroadcastProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.total.update((self.total.value() or 0) + value)
        ctx.timer_service().register_event_time_timer(END_OF_INPUT)

    def process_broadcast_element(self, rule, ctx):
        ctx.get_broadcast_state(RULES).put(rule[0], rule[1])

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        threshold = ctx.get_broadcast_state(RULES).get(key)
        yield key, self.count.value(), self.total.value(), threshold


class Price(KeyedCoProcessFunction):
    def open(self, runtime_context):
        self.price = runtime_context.get_state(ValueStateDescriptor("price", Types.INT()))

    def process_element1(self, tally, ctx):
        yield (*tally, self.price.value())

    def process_element2(self, kind_price, ctx):
        self.price.update(kind_price[1])


class Slow(MapFunction):
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def map(self, value):
        if self.delay_s:
            time.sleep(self.delay_s)
        return value


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def build(env: StreamExecutionEnvironment, n: int, delay_s: float = 0.0) -> object:
    """The job up to its last operator, whose stream is returned (the caller adds the sink)."""
    rules = (
        env.from_collection(sorted(THRESHOLDS.items()))
        .map(lambda rule: rule)
        .uid("rules")
        .broadcast(RULES)
    )
    prices = env.from_collection(sorted(PRICES.items())).key_by(lambda p: p[0])
    tallies = (
        env.from_source(NumberSequenceSource(1, n), "events")
        .uid("events")
        .map(Slow(delay_s))
        .key_by(kind_of)
        .connect(rules)
        .process(Tally())
    )
    return tallies.key_by(lambda t: t[0]).connect(prices).process(Price()).map(tuple)


def write_savepoint(directory: str, n: int = 8000) -> str:
    """Runs the job slowly at parallelism 2 and stops it with a canonical savepoint."""
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage(f"file://{directory}/ckpt")
    build(env, n, delay_s=0.001).sink_to(DiscardingSink())
    client = env.execute_async("connected-upgrade")
    time.sleep(4)  # the thresholds and prices are in, the events not yet all
    return client.stop_with_savepoint(False, f"{directory}/savepoints").result()


if __name__ == "__main__":
    from tests.jobs.arguments import job_arguments

    print(write_savepoint(*job_arguments("DIRECTORY", 1)))
