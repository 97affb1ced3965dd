"""A restart under the default restart strategy (Flink's exponential delay, 1 s first): while
the JobMaster waits, the next attempt's Python workers are started with the task runtime
imported, and the attempt takes them (docs/benchmarks.md, "With the default restart
strategy"). The job recovers exactly-once, and its one recovery reports a first record."""

from __future__ import annotations

import pytest

from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 8000


def test_a_killed_task_process_recovers_exactly_once_with_workers_started_in_the_delay(tmp_path):
    fault = odd_even.Fault("kill", N // 4, str(tmp_path / "fired"), str(tmp_path / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, str(tmp_path / "out"), str(tmp_path / "ckpt"), interval_ms=100, delay_s=0.0003,
        fault=fault, source_parallelism=1,
    )  # fmt: skip
    env.set_restart_strategy(RestartStrategies.fall_back_restart())  # the default: 1 s first

    result = env.execute("restart-delay-workers")

    assert result.attempts == 2
    (recovery,) = result.recoveries
    assert recovery.first_record_at is not None
    assert recovery.submitted_at - recovery.failed_at >= 0.9  # the delay, the workers within it
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)
