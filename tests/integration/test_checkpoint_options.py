"""Each checkpoint option has a test that fails if the option is ignored."""

from __future__ import annotations

import glob
import itertools
import json
import os
import time

import pytest
from typer.testing import CliRunner

from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention
from barrierflow.checkpoint.history import CheckpointStatus
from barrierflow.cli import app
from barrierflow.common import RestartStrategies
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobCanceledError, JobExecutionError
from tests.jobs import odd_even, probe

pytestmark = pytest.mark.spark

COMPLETED, FAILED = CheckpointStatus.COMPLETED, CheckpointStatus.FAILED
N = 60_000  # at 0.1 ms per record and two sources, about 3 s of processing


def _env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment().set_parallelism(2)
    env.set_restart_strategy(RestartStrategies.no_restart())
    return env


def test_a_checkpoint_slower_than_the_timeout_is_aborted_and_the_job_goes_on(spark, tmp_path):
    env = probe.build(_env(), str(tmp_path), N, probe.Behavior("slow", 1, 2.5))
    env.get_checkpoint_config().set_checkpoint_timeout(1000)
    env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(1)

    result = env.execute("timeout")

    first = result.checkpoint_history[0]
    assert first.status is FAILED and "timed out after 1 s" in first.failure_reason
    assert not os.path.exists(tmp_path / "ckpt" / result.job_id / f"chk-{first.checkpoint_id}")
    assert any(c.status is COMPLETED for c in result.checkpoint_history[1:])
    assert result.attempts == 1
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), N)


def test_min_pause_separates_a_completion_from_the_next_trigger(spark, tmp_path):
    env = probe.build(_env(), str(tmp_path), N, probe.Behavior("slow", 0), interval_ms=20)
    env.get_checkpoint_config().set_min_pause_between_checkpoints(400)

    result = env.execute("min-pause")

    history = result.checkpoint_history
    assert len(history) >= 3
    gaps = [b.trigger_timestamp_ms - a.end_timestamp_ms for a, b in itertools.pairwise(history)]
    assert min(gaps) >= 390, gaps  # with an interval of 20 ms alone they would be ~20 ms


def test_max_concurrent_checkpoints_overlap_and_complete_in_order(spark, tmp_path):
    env = probe.build(_env(), str(tmp_path), N, probe.Behavior("slow", 1000, 0.4), interval_ms=100)
    env.get_checkpoint_config().set_max_concurrent_checkpoints(3)

    result = env.execute("concurrent")

    done = [c for c in result.checkpoint_history if c.status is COMPLETED]
    assert len(done) >= 3
    assert [c.checkpoint_id for c in done] == sorted(c.checkpoint_id for c in done)
    assert [c.end_timestamp_ms for c in done] == sorted(c.end_timestamp_ms for c in done)
    overlapping = [
        b for a, b in itertools.pairwise(done) if b.trigger_timestamp_ms < a.end_timestamp_ms
    ]
    assert overlapping, "no two checkpoints were ever in flight at once"


@pytest.mark.parametrize(("failures", "tolerated"), [(2, 2), (3, 2)])
def test_tolerable_failed_checkpoints_fail_the_job_only_beyond_the_number(
    spark, tmp_path, failures, tolerated
):
    env = probe.build(_env(), str(tmp_path), N, probe.Behavior("fail", failures))
    env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(tolerated)

    if failures <= tolerated:
        result = env.execute("tolerated")
        failed = [c for c in result.checkpoint_history if c.status is FAILED]
        assert len(failed) == failures
        assert all("injected snapshot failure" in c.failure_reason for c in failed)
        assert result.checkpoint_history[-1].status is COMPLETED
    else:
        with pytest.raises(JobExecutionError, match="exceed tolerable-failed-checkpoints = 2"):
            env.execute("not-tolerated")


def _start_and_wait_for_a_checkpoint(env, tmp_path, name):
    client = env.execute_async(name)
    deadline = time.monotonic() + 60
    while not glob.glob(str(tmp_path / "ckpt" / "*" / "chk-*" / "_metadata")):
        assert time.monotonic() < deadline, "no checkpoint completed within 60 s"
        time.sleep(0.05)
    return client


def _cancel_keeping_a_checkpoint(tmp_path, n: int) -> str:
    """Runs the odd/even job on the heap backend until a checkpoint completed, cancels it with
    RETAIN_ON_CANCELLATION, and returns the retained checkpoint's directory."""
    first = _env()
    odd_even.build(first, n, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.001)
    first.get_checkpoint_config().set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    client = _start_and_wait_for_a_checkpoint(first, tmp_path, "first")
    client.cancel()
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(30)
    (retained,) = glob.glob(str(tmp_path / "ckpt" / client.get_job_id() / "chk-*"))
    return retained


def test_a_checkpoint_retained_on_cancellation_restores_the_job_exactly_once(spark, tmp_path):
    n = 6000
    retained = _cancel_keeping_a_checkpoint(tmp_path, n)

    second = _env()
    odd_even.build(second, n, str(tmp_path / "out"), str(tmp_path / "ckpt2"), 100, 0.0)
    second.set_restore_path(retained)
    second.execute("second")

    # What the first run committed plus what the second did: every value exactly once.
    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), n)


def test_checkpoints_are_deleted_on_cancel_by_default_but_the_history_stays(spark, tmp_path):
    env = _env()
    odd_even.build(env, 1_000_000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.001)
    client = _start_and_wait_for_a_checkpoint(env, tmp_path, "deleted-on-cancel")
    client.cancel()
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(30)

    job_dir = tmp_path / "ckpt" / client.get_job_id()
    assert not glob.glob(str(job_dir / "chk-*"))
    listed = CliRunner().invoke(app, ["checkpoints", "list", str(job_dir), "--json"])
    rows = json.loads(listed.output)
    assert rows and not any(r["restorable"] for r in rows)


def test_the_command_line_cancels_a_running_job(spark, tmp_path):
    env = _env()
    odd_even.build(env, 1_000_000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.001)
    client = _start_and_wait_for_a_checkpoint(env, tmp_path, "cli-cancel")

    canceled = CliRunner().invoke(
        app, ["cancel", client.get_job_id(), "--checkpoint-dir", str(tmp_path / "ckpt")]
    )

    assert canceled.exit_code == 0, canceled.output
    assert "canceled" in canceled.output
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(30)


@pytest.mark.parametrize("after_finish", [True, False])
def test_checkpoints_after_tasks_finish_decides_whether_checkpoints_go_on(
    spark, tmp_path, after_finish
):
    from barrierflow.datastream.connectors.file_system import FileSink
    from barrierflow.datastream.connectors.number_seq import NumberSequenceSource

    env = _env()
    env.enable_checkpointing(100)
    env.get_checkpoint_config().set_checkpoint_storage(str(tmp_path / "ckpt"))
    env.get_checkpoint_config().set_checkpoints_after_tasks_finish(after_finish)
    short = env.from_source(NumberSequenceSource(1, 10), "short")  # ends at once
    long = env.from_source(NumberSequenceSource(11, 20_000), "long").map(
        odd_even.Throttle(0.0001, None)
    )
    short.union(long).sink_to(FileSink(str(tmp_path / "out")))

    result = env.execute("after-finish")

    values = sorted(odd_even.read_committed(str(tmp_path / "out")))
    assert values == list(range(1, 20_001))  # the final checkpoint committed everything
    if after_finish:
        assert result.num_completed_checkpoints >= 3
    else:
        assert result.num_completed_checkpoints == 1  # the final one only


@pytest.mark.parametrize(("threshold", "kind"), [(0, "file"), (20 * 1024, "inline")])
def test_state_below_the_inline_threshold_travels_inside_the_metadata(
    spark, tmp_path, threshold, kind
):
    env = _env()
    odd_even.build(env, 2000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 100, 0.0)
    env.get_checkpoint_config().set_data_inline_threshold(threshold)
    result = env.execute("inline")

    shown = CliRunner().invoke(
        app,
        ["checkpoints", "show", str(tmp_path / "ckpt"), str(result.checkpoint_ids[-1]), "--json"],
    )
    operators = json.loads(shown.output)["metadata"]["operators"]
    (keyed,) = [op for op in operators if op["uid"] == "running-sum"]
    handles = [h["stream"]["type"] for s in keyed["subtasks"] for h in s["keyed_state"]]
    assert handles and set(handles) == {kind}
    files = glob.glob(str(tmp_path / "ckpt" / result.job_id / "chk-*" / "running-sum-*"))
    assert bool(files) == (kind == "file")


def test_num_retained_keeps_that_many_completed_checkpoints(spark, tmp_path):
    env = _env()
    odd_even.build(env, 20_000, str(tmp_path / "out"), str(tmp_path / "ckpt"), 50, 0.0002)
    env.get_checkpoint_config().set_num_retained_checkpoints(3)
    result = env.execute("retained")

    assert result.num_completed_checkpoints > 3
    kept = sorted(glob.glob(str(tmp_path / "ckpt" / result.job_id / "chk-*" / "_metadata")))
    assert len(kept) == 3 == len(result.checkpoint_ids)
    ids = sorted(int(p.split("chk-")[1].split("/")[0]) for p in kept)
    assert ids == list(result.checkpoint_ids)  # the newest three


def test_a_heap_checkpoint_restores_into_the_rocksdb_backend(spark, tmp_path):
    n = 6000
    retained = _cancel_keeping_a_checkpoint(tmp_path, n)

    second = _env()
    second.configure({"taskmanager.state.local.root-dirs": str(tmp_path / "local")})
    odd_even.build(
        second, n, str(tmp_path / "out"), str(tmp_path / "ckpt2"), 100, 0.0, state_backend="rocksdb"
    )
    second.set_restore_path(retained)
    second.execute("rocksdb")

    odd_even.check_exactly_once(odd_even.read_committed(str(tmp_path / "out")), n)
