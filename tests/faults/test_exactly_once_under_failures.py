"""Killed processes and failing functions: the committed output must be what a failure-free
run could have committed, record by record."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.datastream import CheckpointingMode, StreamExecutionEnvironment
from tests.jobs import odd_even
from tests.jobs.sqlite_sink import SqliteSink, committed_records

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 10000


def _run(
    tmp_path,
    name: str,
    fault_kind: str | None,
    at_value: int = 0,
    source_parallelism=None,
    state_backend: str = "hashmap",
    conf: dict | None = None,
    sink_kind: str = "files",
):
    """``sink_kind``: "files" (FileSink) or "sqlite" (the sink the tests write themselves)."""
    base = tmp_path / name
    fault = None
    if fault_kind is not None:
        fault = odd_even.Fault(fault_kind, at_value, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env,
        N,
        str(base / "out"),
        str(base / "ckpt"),
        interval_ms=100,
        delay_s=0.0003,
        fault=fault,
        source_parallelism=source_parallelism,
        state_backend=state_backend,
        conf=conf,
        sink=SqliteSink(str(tmp_path / f"{name}.db")) if sink_kind == "sqlite" else None,
    )
    result = env.execute(name)
    if sink_kind == "sqlite":
        return result, committed_records(str(tmp_path / f"{name}.db")), base
    return result, odd_even.read_committed(str(base / "out")), base


@pytest.mark.parametrize("kind", ["kill", "raise"])
@pytest.mark.parametrize("at_value", [1500, 4000, 9500])
def test_a_failure_mid_stream_commits_each_sum_exactly_once(spark, tmp_path, kind, at_value):
    result, records, base = _run(tmp_path, f"{kind}-{at_value}", kind, at_value)

    assert os.path.exists(base / "fired"), "the fault never fired: no checkpoint before it?"
    assert result.attempts == 2
    odd_even.check_exactly_once(records, N)


@pytest.mark.parametrize("sink_kind", ["files", "sqlite"])
def test_output_after_a_kill_equals_the_failure_free_output_record_by_record(
    spark, tmp_path, sink_kind
):
    # One source subtask: the order of values per key is deterministic, so are the sums.
    _, golden, _ = _run(tmp_path, "golden", None, source_parallelism=1, sink_kind=sink_kind)
    result, faulty, base = _run(
        tmp_path, "faulty", "kill", 5000, source_parallelism=1, sink_kind=sink_kind
    )

    assert os.path.exists(base / "fired") and result.attempts == 2
    assert len(golden) == N
    assert sorted(faulty) == sorted(golden)


def test_a_corrupt_latest_checkpoint_is_reported_and_recovery_falls_back_to_the_previous_one(
    spark, tmp_path, caplog
):
    base = tmp_path / "corrupt"
    fault = odd_even.Fault("corrupt", 3000, str(base / "fired"), str(base / "ckpt"), 2)
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env, N, str(base / "out"), str(base / "ckpt"), 100, 0.0003, fault, num_retained=2
    )
    with caplog.at_level("INFO", logger="barrierflow"):
        result = env.execute("corrupt")

    assert os.path.exists(base / "fired") and result.attempts == 2
    fallback = [r.getMessage() for r in caplog.records if "falling back" in r.getMessage()]
    assert fallback and "is unusable: truncated" in fallback[0], fallback
    restored = [r.getMessage() for r in caplog.records if "restores checkpoint" in r.getMessage()]
    assert restored, "the second attempt restored nothing"
    # The sink had committed up to the corrupt checkpoint, so replaying from the one before
    # may repeat records; nothing may be lost.
    values = {r[1] for r in odd_even.read_committed(str(base / "out"))}
    assert values == set(range(1, N + 1))


def test_at_least_once_mode_loses_nothing_after_a_kill(spark, tmp_path):
    base = tmp_path / "at-least-once"
    fault = odd_even.Fault("kill", 5000, str(base / "fired"), str(base / "ckpt"))
    env = StreamExecutionEnvironment().set_parallelism(2)
    odd_even.build(
        env,
        N,
        str(base / "out"),
        str(base / "ckpt"),
        100,
        0.0003,
        fault,
        mode=CheckpointingMode.AT_LEAST_ONCE,
    )
    result = env.execute("at-least-once")

    assert os.path.exists(base / "fired") and result.attempts == 2
    values = [r[1] for r in odd_even.read_committed(str(base / "out"))]
    assert set(values) == set(range(1, N + 1))  # nothing lost; duplicates are allowed
    # (the exactly-once runs above, under the same kill, have none: check_exactly_once)


@pytest.fixture(scope="module")
def golden(spark, tmp_path_factory) -> list:
    """The failure-free output with one source subtask (hashmap backend)."""
    _, records, _ = _run(tmp_path_factory.mktemp("golden"), "golden", None, source_parallelism=1)
    assert len(records) == N
    return records


ROCKSDB = {
    "full": {},
    "incremental": {"execution.checkpointing.incremental": True},
    "incremental-local-recovery": {
        "execution.checkpointing.incremental": True,
        "execution.state-recovery.from-local": True,
    },
}


@pytest.mark.parametrize("snapshots", list(ROCKSDB))
def test_the_rocksdb_backend_restores_exactly_once_after_a_kill(spark, tmp_path, golden, snapshots):
    local = tmp_path / "local"
    conf = {"taskmanager.state.local.root-dirs": str(local), **ROCKSDB[snapshots]}
    result, records, base = _run(
        tmp_path, snapshots, "kill", 4000, source_parallelism=1, state_backend="rocksdb", conf=conf
    )

    assert os.path.exists(base / "fired") and result.attempts == 2
    assert sorted(records) == sorted(golden)
    (restore,) = result.restores
    if snapshots == "incremental-local-recovery":
        assert restore.bytes_read == 0  # every subtask opened its local copy
    elif snapshots == "incremental":
        assert restore.bytes_read > 0  # SST files are never inline (the rest is, being small)
    # every subtask's RocksDB directory was removed when its operator closed, and the job's
    # local directory (local copies included) when it ended
    assert not [p for p in local.rglob("CURRENT")]


def test_a_job_whose_driver_died_resumes_from_its_own_checkpoints_exactly_once(tmp_path):
    """The driver (JobMaster, Spark and all) is killed; ``run --resume`` takes over the job's
    retained checkpoints, rebuilds the shared state registry from their metadata, and goes on
    in the same job directory."""
    n, ckpt, out = 20000, tmp_path / "ckpt", tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.getcwd(),
        "ODD_EVEN_N": str(n),
        "ODD_EVEN_OUT": str(out),
        "ODD_EVEN_CKPT": str(ckpt),
        "ODD_EVEN_LOCAL": str(tmp_path / "local"),
    }
    command = [sys.executable, "-m", "barrierflow.cli", "run", "tests/jobs/resumable.py"]
    first = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    completed = 0
    while completed < 3 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
        histories = list(ckpt.glob("*/_history.json"))
        if histories:
            with contextlib.suppress(ValueError, OSError):
                records = json.loads(histories[0].read_text())["records"]
                completed = sum(r["status"] == "COMPLETED" for r in records)
    assert completed >= 3 and first.poll() is None, "the first run ended before the kill"
    os.killpg(first.pid, signal.SIGKILL)  # the driver, its JVM and the Python workers
    first.wait()
    (job_root,) = ckpt.iterdir()
    job_id = job_root.name

    second = subprocess.run(
        [*command, "--resume", job_id], env=env, capture_output=True, text=True, timeout=300
    )

    assert second.returncode == 0, second.stderr[-3000:]
    assert "Took over 1 retained checkpoint(s)" in second.stderr
    odd_even.check_exactly_once(odd_even.read_committed(str(out)), n)
    records = json.loads((job_root / "_history.json").read_text())["records"]
    assert not [r for r in records if r["status"] == "FAILED"], "a checkpoint failed after resume"
    storage = CheckpointDirectory(str(job_root))
    retained = [storage.read_metadata(c) for c in storage.list_checkpoint_dirs()]
    assert len(retained) == 1  # the final one; the rest subsumed, orphans swept
    assert set(storage.list_shared()) == retained[0].shared_paths()
