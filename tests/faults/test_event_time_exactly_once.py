"""Windows and event-time timers under SIGKILL: the committed output must equal a failure-free
run's, record by record, whatever was open or pending when the process died; in both backends,
and after a restore at another parallelism."""

from __future__ import annotations

import os

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobExecutionError
from tests.jobs import event_time
from tests.jobs.odd_even import Fault

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 12000  # 6000 per source subtask at 0.3 ms: checkpoints complete mid-stream


def _run(tmp_path, name, kind, fault_at=None, backend="hashmap", parallelism=2, **kw):
    base = tmp_path / name
    fault = None
    if fault_at is not None:
        fault = Fault("kill", fault_at, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(parallelism)
    event_time.build(env, kind, N, str(base / "out"), str(base / "ckpt"), fault, backend, **kw)
    result = env.execute(name)
    return result, event_time.committed(str(base / "out")), base


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory):
    """A failure-free run of each job, checked against the output computed without it."""
    tmp = tmp_path_factory.mktemp("golden")
    runs = {}
    for kind in ("window", "timers"):
        result, output, _ = _run(tmp, kind, kind)
        assert result.attempts == 1
        runs[kind] = output
    assert runs["window"] == event_time.expected(N)
    assert runs["timers"] == runs["window"]
    return runs


@pytest.mark.parametrize(
    ("kind", "fault_at", "backend"),
    [
        ("window", 3000, "hashmap"),  # early: the first windows open, none fired yet
        ("window", 8000, "rocksdb"),
        ("window", 11950, "hashmap"),  # at the end: most windows fired, the last ones pending
        ("timers", 5000, "hashmap"),
        ("timers", 10000, "rocksdb"),
    ],
)
def test_a_kill_commits_every_window_exactly_once(spark, tmp_path, golden, kind, fault_at, backend):
    result, output, base = _run(tmp_path, f"{kind}-{fault_at}", kind, fault_at, backend)

    assert os.path.exists(base / "fired"), "the fault never fired: no checkpoint before it?"
    assert result.attempts == 2
    assert output == golden[kind]


@pytest.mark.parametrize(("kind", "backend"), [("window", "rocksdb"), ("timers", "hashmap")])
def test_windows_and_timers_restored_at_another_parallelism_survive_a_kill(
    spark, tmp_path, golden, kind, backend
):
    base = tmp_path / "rescaled"
    first = StreamExecutionEnvironment().set_parallelism(2)
    fault = Fault("raise", 5000, str(base / "failed"), str(base / "ckpt"))
    event_time.build(
        first, kind, N, str(base / "out"), str(base / "ckpt"), fault, backend, restarts=0
    )
    with pytest.raises(JobExecutionError):
        first.execute("first")
    (job_root,) = (base / "ckpt").iterdir()
    newest = max(CheckpointDirectory(str(job_root)).list_completed())

    second = StreamExecutionEnvironment().set_parallelism(3)
    second.set_restore_path(str(job_root / f"chk-{newest}"))
    kill = Fault("kill", 9000, str(base / "killed"), str(base / "ckpt2"))
    event_time.build(second, kind, N, str(base / "out"), str(base / "ckpt2"), kill, backend)
    result = second.execute("second")

    assert os.path.exists(base / "killed") and result.attempts == 2
    (restore, *_) = result.restores
    assert restore.checkpoint_id == newest
    assert event_time.committed(str(base / "out")) == golden[kind]
