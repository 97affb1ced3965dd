"""Broadcast state and side outputs under SIGKILL: the committed output (main and side) equals
a failure-free run's and what the job must compute, record by record, in both backends and
after a restore at another parallelism. The thresholds' source has ended before the kill, so a
judgment after the restore is right only if the broadcast state came back in every subtask."""

from __future__ import annotations

import os

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobExecutionError
from tests.jobs import broadcast_rules
from tests.jobs.odd_even import Fault

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 12000


def _run(tmp_path, name, fault_at=None, backend="hashmap"):
    base = tmp_path / name
    fault = None
    if fault_at is not None:
        fault = Fault("kill", fault_at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    broadcast_rules.build(env, N, str(base / "out"), str(base / "ckpt"), fault, backend)
    result = env.execute(name)
    return result, broadcast_rules.committed(str(base / "out")), base


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory):
    result, output, _ = _run(tmp_path_factory.mktemp("golden"), "golden")
    assert result.attempts == 1
    assert output == broadcast_rules.expected(N)
    assert sum(output[1].values()) > 0  # side output records exist to be checked
    return output


@pytest.mark.parametrize(("fault_at", "backend"), [(6000, "hashmap"), (9000, "rocksdb")])
def test_a_kill_judges_every_event_exactly_once(spark, tmp_path, golden, fault_at, backend):
    result, output, base = _run(tmp_path, f"kill-{fault_at}", fault_at, backend)

    assert os.path.exists(base / "fired"), "the fault never fired: no checkpoint before it?"
    assert result.attempts == 2
    assert output == golden


def test_broadcast_state_restored_at_another_parallelism_reaches_every_subtask(
    spark, tmp_path, golden
):
    base = tmp_path / "rescaled"
    first = StreamExecutionEnvironment().set_parallelism(2)
    fault = Fault("raise", 5000, str(base / "failed"), str(base / "ckpt"))
    broadcast_rules.build(first, N, str(base / "out"), str(base / "ckpt"), fault, restarts=0)
    with pytest.raises(JobExecutionError):
        first.execute("first")
    (job_root,) = (base / "ckpt").iterdir()
    newest = max(CheckpointDirectory(str(job_root)).list_completed())

    second = StreamExecutionEnvironment().set_parallelism(3)
    second.set_restore_path(str(job_root / f"chk-{newest}"))
    kill = Fault("kill", 9000, str(base / "killed"), str(base / "ckpt2"))
    broadcast_rules.build(second, N, str(base / "out"), str(base / "ckpt2"), kill)
    result = second.execute("second")

    assert os.path.exists(base / "killed") and result.attempts == 2
    assert result.restores[0].checkpoint_id == newest
    assert broadcast_rules.committed(str(base / "out")) == golden
