"""Checkpoints and sink files on S3 (a real S3-protocol server, tests/servers/s3.py) under a
killed Python worker: RocksDB incremental checkpoints restored, a FileSink on S3 committed
exactly once, ``shared/`` cleaned down to what the retained checkpoints reference, and the
command line reading the checkpoints with the s3.* keys given as ``-D``."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.storage import CheckpointDirectory, job_root_uri
from barrierflow.cli import app
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.file_system import FileSink
from tests.jobs import odd_even
from tests.jobs.kill_before_commit import KillBeforeCommit

pytestmark = [pytest.mark.spark, pytest.mark.faults]

N = 6000


def _run_on_s3(s3, bucket: str, tmp_path, name: str, sink):
    """The odd/even job with RocksDB incremental checkpoints and its output on S3."""
    env = StreamExecutionEnvironment().set_parallelism(2)
    conf = {
        **s3.configuration(),
        "execution.checkpointing.incremental": True,
        "state.backend.rocksdb.writebuffer.size": "64kb",
        "taskmanager.state.local.root-dirs": str(tmp_path / f"local-{name}"),
    }
    odd_even.build(
        env, N, "unused", f"s3://{bucket}/checkpoints-{name}", interval_ms=100, delay_s=0.0003,
        source_parallelism=1, num_retained=2, state_backend="rocksdb", conf=conf, sink=sink,
    )  # fmt: skip
    return env.execute(f"s3-incremental-{name}")


def test_incremental_rocksdb_checkpoints_on_s3_restore_a_killed_job_exactly_once(
    spark, s3, tmp_path, reset_file_systems
):
    bucket = s3.bucket()
    _run_on_s3(s3, bucket, tmp_path, "golden", FileSink(f"s3://{bucket}/golden"))
    golden = s3.committed_records(bucket, "golden/")
    checkpoints = f"s3://{bucket}/checkpoints-faulty"
    marker = str(tmp_path / "fired")
    sink = KillBeforeCommit(FileSink(f"s3://{bucket}/out"), marker, after_commits=2)

    result = _run_on_s3(s3, bucket, tmp_path, "faulty", sink)

    assert os.path.exists(marker), "the kill never fired"
    assert result.attempts == 2
    (restore,) = result.restores
    assert restore.bytes_read > 0  # the second attempt downloaded its state from S3
    assert len(golden) == N
    assert sorted(s3.committed_records(bucket, "out/")) == sorted(golden)
    # shared/ holds exactly the files the retained checkpoints reference, listed by the
    # server itself (not through the storage code under test)
    job = f"checkpoints-faulty/{result.job_id}"
    storage = CheckpointDirectory(job_root_uri(checkpoints, result.job_id))
    retained = [storage.read_metadata(cid) for cid in result.checkpoint_ids]
    referenced = set().union(*(m.shared_paths() for m in retained))
    assert referenced, "no shared file: were the checkpoints incremental?"
    in_bucket = {k.removeprefix(f"{job}/") for k in s3.keys(bucket, f"{job}/shared/")}
    assert in_bucket == referenced
    assert not [k for k in s3.keys(bucket, job) if "inprogress" in k]

    # The command line, given the s3.* keys as -D, lists them as restorable.
    file_systems.initialize(file_systems.FileSystemSettings())
    dynamic = [arg for key, value in s3.configuration().items() for arg in ("-D", f"{key}={value}")]
    listed = CliRunner().invoke(app, ["checkpoints", "list", checkpoints, "--json", *dynamic])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    restorable = {r["id"] for r in rows if r["restorable"]}
    assert restorable == set(result.checkpoint_ids)
    assert s3.secret_key not in listed.output
