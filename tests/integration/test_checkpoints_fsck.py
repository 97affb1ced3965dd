"""``barrierflow checkpoints fsck`` on a real job's directory of incremental RocksDB
checkpoints (local Spark) and on S3: a deleted shared file, a flipped byte in a state file and a
stray file are each reported with what depends on them, the healthy checkpoints pass, the exit
status says which."""

from __future__ import annotations

import glob
import json
import os
import time

import pytest
from typer.testing import CliRunner

from barrierflow.api.checkpoint_config import ExternalizedCheckpointRetention
from barrierflow.api.configuration import Configuration
from barrierflow.checkpoint import file_systems
from barrierflow.checkpoint.fsck_scan import fsck
from barrierflow.cli import app
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.errors import JobCanceledError
from barrierflow.testing.checkpoint_directory import write_job_checkpoints
from tests.jobs.keyed_counts import ThenIdle, counts_job
from tests.jobs.odd_even import read_committed


def fsck_json(path: str, *conf: str):
    result = CliRunner().invoke(app, ["checkpoints", "fsck", path, "--json", *conf])
    return result.exit_code, json.loads(result.output)


@pytest.mark.spark
def test_a_real_jobs_checkpoints_damaged_three_ways(spark, tmp_path):
    env = StreamExecutionEnvironment().set_spark_session(spark).set_parallelism(2)
    source = ThenIdle(0, 2999, batch=50, pause_s=0.05)  # new state in every checkpoint
    counts_job(env, 3000, 500, str(tmp_path / "out"), str(tmp_path / "ckpt"), "rocksdb", source)
    config = env.get_checkpoint_config()
    config.set_num_retained_checkpoints(4)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    client = env.execute_async("counts")
    deadline = time.monotonic() + 90
    while len(read_committed(str(tmp_path / "out"))) < 3000:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    client.cancel()
    with pytest.raises(JobCanceledError):
        client.get_job_execution_result().result(60)
    (root,) = glob.glob(f"{tmp_path}/ckpt/*")
    code, (healthy,) = fsck_json(str(tmp_path / "ckpt"))
    assert code == 0 and healthy["healthy"] and len(healthy["snapshots"]) >= 2, healthy

    oldest = min(s["checkpoint_id"] for s in healthy["snapshots"])
    later = sorted(p for p in healthy["shared_references"] if uploader(p) > oldest)
    deleted, flipped = later[-1], later[0]  # files the oldest checkpoint does not name
    os.remove(os.path.join(root, deleted))
    with open(os.path.join(root, flipped), "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 0xFF]))
    stray = os.path.join(root, "shared", "stray")
    with open(stray, "wb") as f:
        f.write(b"not a checkpoint's")
    os.utime(stray, (time.time() - 600, time.time() - 600))

    code, (report,) = fsck_json(root)
    assert code == 1
    problems = {f["path"]: f for f in report["findings"]}
    assert problems[deleted]["problem"] == "missing"
    assert problems[flipped]["problem"] == "checksum mismatch"
    for path in (deleted, flipped):
        named_by = {d.split(":")[0] for d in problems[path]["dependents"]}
        assert named_by == set(healthy["shared_references"][path])
    verdicts = {s["name"]: not s["damaged"] for s in report["snapshots"]}
    assert verdicts[f"checkpoint {oldest}"] and not all(verdicts.values())
    assert [o["path"] for o in report["orphans"]] == ["shared/stray"]


def uploader(path: str) -> int:
    return int(path.rsplit("/", 1)[1].split("-", 1)[0])


def test_fsck_reads_checkpoints_on_s3(s3, reset_file_systems):
    settings = file_systems.settings_from(Configuration(s3.configuration()))
    file_systems.initialize(settings)
    bucket = s3.bucket()
    write_job_checkpoints(f"s3://{bucket}/ckpt/job", checkpoints=3, keys_per_checkpoint=100)
    (report,) = fsck(f"s3://{bucket}/ckpt")
    assert report.healthy and len(report.snapshots) == 3
    victim = next(p for p in report.shared_references if p.startswith("shared/"))
    s3.put(bucket, f"ckpt/job/{victim}", b"truncated")
    (damaged,) = fsck(f"s3://{bucket}/ckpt/job")
    assert [f.problem.value for f in damaged.findings] == ["size mismatch"]
    file_systems.initialize(file_systems.FileSystemSettings())  # the command sets its own
    conf = [arg for k, v in s3.configuration().items() for arg in ("-D", f"{k}={v}")]
    code, (from_cli,) = fsck_json(f"s3://{bucket}/ckpt", *conf)
    assert code == 1 and from_cli["findings"][0]["path"] == victim
