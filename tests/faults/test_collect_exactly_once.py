"""What a job sends to the driver (print(), execute_and_collect) under SIGKILL: with
checkpointing, the collected records equal a failure-free run's, record by record."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from barrierflow.cluster import collected_records
from barrierflow.cluster.collected_records import QueueCollector
from barrierflow.connectors.builtin.collect_sink import CollectSink
from barrierflow.datastream import StreamExecutionEnvironment
from tests.jobs import odd_even

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 10000


def _collect(tmp_path, name, fault_at=None):
    base = tmp_path / name
    fault = None
    if fault_at is not None:
        fault = odd_even.Fault("kill", fault_at, str(base / "fired"), str(base / "ckpt"))
    collector = QueueCollector()
    collected_records.register(collector)
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, "", str(base / "ckpt"), 100, 0.0003, fault, source_parallelism=1,
        sink=CollectSink(collector.id),
    )  # fmt: skip
    result = env.execute(name)
    collected_records.unregister(collector.id)
    records = []
    while not collector.records.empty():
        records.append(tuple(collector.records.get()))
    return result, Counter(records), base


def test_collected_results_after_a_kill_equal_the_failure_free_ones(spark, tmp_path):
    _, golden, _ = _collect(tmp_path, "golden")
    result, faulty, base = _collect(tmp_path, "faulty", fault_at=5000)

    assert os.path.exists(base / "fired") and result.attempts == 2
    assert sum(golden.values()) == N
    assert faulty == golden
