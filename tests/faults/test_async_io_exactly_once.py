"""Async I/O under a SIGKILL: an enrichment against a local HTTP service (10 ms a call, up to
20 in flight) feeds a running sum and an exactly-once file sink; the process running the
source and the async operator is killed mid-stream, after a checkpoint completed (with 10 ms
calls and a record every half millisecond, calls are in flight at every barrier). The committed
output must equal a failure-free run's, record by record."""

from __future__ import annotations

import os

import cloudpickle
import pytest

from barrierflow.common import RestartStrategies, Time
from barrierflow.datastream import AsyncDataStream, StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.datastream.functions.one_input import KeyedProcessFunction
from barrierflow.datastream.state import ValueStateDescriptor
from tests.jobs import odd_even
from tests.jobs.http_enrichment import AsyncEnrich
from tests.servers.http_service import http_service

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 3000


class EnrichedSum(KeyedProcessFunction):
    """(value, enrichment) -> [key, value, enrichment, running sum of the enrichments]."""

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):
        total = (self.total.value() or 0) + value[1]
        self.total.update(total)
        yield [ctx.get_current_key(), value[0], value[1], total]


cloudpickle.register_pickle_by_value(__import__(__name__, fromlist=["_"]))


def _run(tmp_path, port: int, name: str, ordered: bool, kill_at: int | None):
    base = tmp_path / name
    fault = None
    if kill_at is not None:
        fault = odd_even.Fault("kill", kill_at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(base / "ckpt"))
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 200))
    numbers = env.from_source(NumberSequenceSource(1, N), "numbers").set_parallelism(1)
    throttled = numbers.map(odd_even.Throttle(0.0005, fault)).uid("throttle").set_parallelism(1)
    wait = AsyncDataStream.ordered_wait if ordered else AsyncDataStream.unordered_wait
    enriched = wait(throttled, AsyncEnrich(port), Time.seconds(30), 20)
    enriched = enriched.uid("enrich").set_parallelism(1)
    if ordered:  # one path per key from the async operator: the sums are deterministic
        enriched = enriched.key_by(lambda v: v[0] % 2).process(EnrichedSum()).uid("sum")
    enriched.sink_to(FileSink(str(base / "out"))).uid("sink")
    result = env.execute(name)
    if kill_at is not None:
        assert os.path.exists(base / "fired"), "the fault never fired"
        assert result.attempts == 2
    return sorted(map(tuple, odd_even.read_committed(str(base / "out"))))


@pytest.fixture(scope="module")
def service():
    with http_service(latency_s=0.01) as running:
        yield running


@pytest.mark.parametrize("ordered", [True, False], ids=["ordered", "unordered"])
def test_a_kill_with_calls_in_flight_commits_exactly_the_failure_free_output(
    spark, tmp_path, service, ordered
):
    golden = _run(tmp_path, service.port, "golden", ordered, None)
    faulty = _run(tmp_path, service.port, "faulty", ordered, 1500)

    assert len(golden) == N
    assert faulty == golden  # record by record (in ordered mode, with the running sums)
    if not ordered:
        assert golden == [(v, v * v) for v in range(1, N + 1)]
