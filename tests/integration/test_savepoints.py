"""Savepoints on local Spark: taken while the job runs, or to stop it; moved, then restored at
another parallelism, into the other state backend; never subsumed; mapped by uid (-n); NO_CLAIM
and CLAIM; restored again after an early failure; taken of a job without checkpointing; and
through the command line. Outputs are checked exactly once over both runs together."""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from barrierflow.checkpoint.storage import locate_snapshot
from barrierflow.cli import app
from barrierflow.common import JobStatus
from barrierflow.common.job_client import SavepointFormatType
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from barrierflow.errors import ConfigurationError
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, SnapshotFormat
from tests.jobs.odd_even import Fault, RunningSum, build, check_exactly_once, read_committed

pytestmark = pytest.mark.spark

N = 30_000
SLOW = 0.0005  # per record and source subtask: the first job runs about 7 s unless stopped


def wait_for_checkpoints(checkpoint_dir: Path, count: int = 1, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(glob.glob(f"{checkpoint_dir}/*/chk-*/_metadata")) < count:
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.05)


def first_run(spark, root: Path, **build_options):
    """The odd/even job at parallelism 2, slowed down, started; (env, client)."""
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    options = {"interval_ms": 300, "delay_s": SLOW, **build_options}
    build(env, N, str(root / "out"), str(root / "ckpt"), **options)
    client = env.execute_async("savepoints")
    wait_for_checkpoints(root / "ckpt")
    return env, client


def second_run(spark, root: Path, restore: str, parallelism: int = 3, **build_options):
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(parallelism)
    build(env, N, str(root / "out"), str(root / "ckpt2"), interval_ms=300, **build_options)
    env.set_restore_path(restore)
    return env


def tree_digest(directory: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(directory).rglob("*")):
        digest.update(str(path.relative_to(directory)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def stopped_savepoint(spark, tmp_path_factory):
    """A canonical savepoint that stopped the odd/even job, and the job's output directory."""
    root = tmp_path_factory.mktemp("stopped")
    _, client = first_run(spark, root)
    path = client.stop_with_savepoint(False, str(root / "savepoints")).result()
    return path, root / "out"


@pytest.mark.parametrize(
    ("format_type", "restore_backend"),
    [
        (SavepointFormatType.CANONICAL, "hashmap"),
        (SavepointFormatType.CANONICAL, "rocksdb"),  # restored by SST ingestion
        (SavepointFormatType.NATIVE, "rocksdb"),
    ],
)
def test_a_stopped_job_restored_from_its_moved_savepoint_at_another_parallelism_is_exactly_once(
    spark, tmp_path, format_type, restore_backend, caplog
):
    incremental = {"execution.checkpointing.incremental": True}
    _, client = first_run(spark, tmp_path, state_backend="rocksdb", conf=incremental)
    running = client.trigger_savepoint(str(tmp_path / "savepoints"), format_type).result()
    wait_for_checkpoints(tmp_path / "ckpt", count=1)
    time.sleep(0.7)  # more checkpoints complete and are subsumed (num-retained 1)
    stopped = client.stop_with_savepoint(
        False, str(tmp_path / "savepoints"), format_type=format_type
    ).result()
    assert client.get_job_status().result() is JobStatus.FINISHED
    result = client.get_job_execution_result().result()
    kinds = [r.kind for r in result.checkpoint_history if r.external_path]
    assert kinds == [CheckpointKind.SAVEPOINT, CheckpointKind.SUSPEND]

    # the savepoint taken while running outlived the checkpoints retention subsumed
    _, running_meta = locate_snapshot(running)
    assert running_meta.is_savepoint and running_meta.snapshot_format is SnapshotFormat(
        format_type.value
    )
    stopped_out = read_committed(str(tmp_path / "out"))
    assert 0 < len(stopped_out) < N
    for name in os.listdir(stopped):  # self-contained: nothing points into shared/
        assert not name.startswith("shared")

    moved = str(tmp_path / "elsewhere" / "the-savepoint")
    shutil.move(stopped, moved)
    shutil.rmtree(tmp_path / "ckpt")  # the first job's checkpoints are gone
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        second_run(spark, tmp_path, moved, state_backend=restore_backend).execute("resumed")
    check_exactly_once(read_committed(str(tmp_path / "out")), N)
    _, stopped_meta = locate_snapshot(moved)
    # a restore says what it restores: a savepoint here
    assert f"Attempt 1 restores savepoint {stopped_meta.checkpoint_id}" in caplog.messages


def test_a_job_lacking_a_stateful_operator_of_the_savepoint_starts_only_when_allowed(
    spark, tmp_path, stopped_savepoint
):
    path, _ = stopped_savepoint
    changed = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    changed.set_restore_path(path)
    (
        changed.from_source(NumberSequenceSource(1, N), "numbers")
        .key_by(lambda x: x % 2)
        .process(RunningSum())
        .uid("running-sum-v2")  # a new operator: the old one's state has nowhere to go
        .sink_to(DiscardingSink())
        .uid("sink")
    )
    with pytest.raises(ConfigurationError, match=r"operators \['running-sum'\].*-n"):
        changed.execute("renamed")
    changed.configure({"execution.state-recovery.ignore-unclaimed-state": True})
    result = changed.execute("renamed")
    assert result.attempts == 1


def test_no_claim_never_touches_the_snapshot_and_claim_deletes_it_once_subsumed(
    spark, tmp_path, stopped_savepoint
):
    path, _ = stopped_savepoint
    no_claim, claim = str(tmp_path / "no-claim"), str(tmp_path / "claim")
    shutil.copytree(path, no_claim)
    shutil.copytree(path, claim)
    before = tree_digest(no_claim)
    second_run(spark, tmp_path / "a", no_claim).execute("no-claim")
    assert tree_digest(no_claim) == before

    env = second_run(spark, tmp_path / "b", claim)
    env.configure({"execution.state-recovery.claim-mode": "CLAIM"})
    result = env.execute("claim")
    assert result.num_completed_checkpoints >= 1
    assert not os.path.exists(claim)


def test_a_failure_before_the_first_checkpoint_after_a_restore_restores_the_savepoint_again(
    spark, tmp_path, stopped_savepoint
):
    path, stopped_out = stopped_savepoint
    out = tmp_path / "out"
    shutil.copytree(stopped_out, out)  # the output up to the savepoint
    fault = Fault("raise", 1, str(tmp_path / "fired"), str(tmp_path / "ckpt2"), min_checkpoints=0)
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    build(env, N, str(out), str(tmp_path / "ckpt2"), interval_ms=60_000, fault=fault)
    env.set_restore_path(path)
    result = env.execute("fails-early")
    assert os.path.exists(tmp_path / "fired")
    savepoint_id = locate_snapshot(path)[1].checkpoint_id
    assert result.attempts == 2 and result.num_completed_checkpoints == 1  # the final one
    assert (result.restores[-1].attempt, result.restores[-1].checkpoint_id) == (2, savepoint_id)
    check_exactly_once(read_committed(str(out)), N)


def test_two_savepoints_asked_for_at_once_are_both_taken_and_cancel_takes_one_more(spark, tmp_path):
    _, client = first_run(spark, tmp_path)
    paths: list[str] = []

    def take(directory: str) -> None:
        paths.append(client.trigger_savepoint(str(tmp_path / directory)).result())

    threads = [threading.Thread(target=take, args=(d,)) for d in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(paths) == 2 and paths[0] != paths[1]
    ids = sorted(locate_snapshot(p)[1].checkpoint_id for p in paths)
    assert ids[0] < ids[1]

    job_id, ckpt = client.get_job_id(), str(tmp_path / "ckpt")
    canceled = CliRunner().invoke(
        app, ["cancel", job_id, "-s", str(tmp_path / "c"), "--checkpoint-dir", ckpt]
    )
    assert canceled.exit_code == 0, canceled.output
    last = canceled.output.strip().splitlines()[-1]
    assert last.startswith(f"Savepoint completed. Path: {tmp_path / 'c'}/savepoint-")
    assert (
        locate_snapshot(last.removeprefix("Savepoint completed. Path: "))[1].checkpoint_id > ids[1]
    )
    assert client.get_job_status().result() is JobStatus.CANCELED


def test_a_job_without_checkpointing_takes_savepoints_and_stops_with_one(spark, tmp_path):
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    build(env, N, str(tmp_path / "out"), None, delay_s=SLOW)
    client = env.execute_async("no-checkpointing")
    time.sleep(2.0)
    running = client.trigger_savepoint(str(tmp_path / "savepoints")).result()
    stopped = client.stop_with_savepoint(False, str(tmp_path / "savepoints")).result()
    assert os.path.exists(f"{running}/_metadata")
    assert client.get_job_status().result() is JobStatus.FINISHED
    resumed = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    build(resumed, N, str(tmp_path / "out"), None)
    resumed.set_restore_path(stopped)
    resumed.execute("no-checkpointing-resumed")
    check_exactly_once(read_committed(str(tmp_path / "out")), N)


def test_the_command_line_takes_stops_shows_and_disposes_of_savepoints(spark, tmp_path):
    _, client = first_run(spark, tmp_path)
    job_id, ckpt = client.get_job_id(), str(tmp_path / "ckpt")
    runner = CliRunner()
    taken = runner.invoke(
        app,
        ["savepoint", job_id, str(tmp_path / "sp"), "--type", "native", "--checkpoint-dir", ckpt],
    )
    assert taken.exit_code == 0, taken.output
    last = taken.output.strip().splitlines()[-1]
    assert last.startswith("Savepoint completed. Path: ")
    taken_path = last.removeprefix("Savepoint completed. Path: ")
    shown = runner.invoke(app, ["checkpoints", "show", taken_path])
    assert shown.exit_code == 0 and "savepoint, native format" in shown.output

    stopped = runner.invoke(
        app,
        [
            "stop",
            job_id,
            "--savepoint-path",
            str(tmp_path / "sp"),
            "--drain",
            "--checkpoint-dir",
            ckpt,
        ],
    )
    assert stopped.exit_code == 0, stopped.output
    stop_path = stopped.output.strip().splitlines()[-1].removeprefix("Savepoint completed. Path: ")
    assert locate_snapshot(stop_path)[1].kind is CheckpointKind.TERMINATE
    assert client.get_job_status().result() is JobStatus.FINISHED

    gone = runner.invoke(app, ["savepoint", job_id, "--checkpoint-dir", ckpt])
    assert gone.exit_code == 1 and f"No running job {job_id}" in gone.output
    refused = runner.invoke(app, ["savepoint", "--dispose", glob.glob(f"{ckpt}/*/chk-*")[0]])
    assert refused.exit_code == 1 and "not a savepoint" in refused.output
    disposed = runner.invoke(app, ["savepoint", "-d", taken_path])
    assert disposed.exit_code == 0 and not os.path.exists(taken_path)


@pytest.mark.parametrize(
    ("variant", "exit_code", "expected"),
    [
        ("same", 0, ["running-sum (RunningSum): restored, keyed state total (value)", "succeed"]),
        ("renamed", 1, ["running-sum-v2 (RunningSum): new", "left behind", "-n", "would fail"]),
        ("max-parallelism", 1, ["max parallelism 16 and the job now has 64", "would fail"]),
    ],
)
def test_a_dry_run_tells_what_a_restore_would_do_without_starting_spark(
    stopped_savepoint, monkeypatch, variant, exit_code, expected
):
    path, _ = stopped_savepoint
    monkeypatch.setenv("BARRIERFLOW_TEST_VARIANT", variant)
    result = CliRunner().invoke(
        app, ["run", "tests/jobs/savepoint_variants.py", "-s", path, "--dry-run"]
    )
    assert result.exit_code == exit_code, result.output
    for text in expected:
        assert text in result.output
    assert "parallelism 2 -> 3" in result.output or variant != "same"
