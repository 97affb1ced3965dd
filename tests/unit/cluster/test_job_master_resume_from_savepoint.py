"""A job started from a savepoint whose driver dies before the job's first checkpoint: a
resume restores that savepoint again, as Flink's recovered job does, instead of finding
nothing to resume (played without Spark, as the fencing tests play the slots and tasks)."""

from __future__ import annotations

import dataclasses
import logging

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.checkpoint.storage_layout import RESTORED_FROM_FILE
from barrierflow.client.planning import plan_job
from barrierflow.control import messages as msg
from barrierflow.datastream import StreamExecutionEnvironment
from barrierflow.datastream.connectors.discarding import DiscardingSink
from barrierflow.datastream.connectors.number_seq import NumberSequenceSource
from tests.unit.cluster import test_job_master_fencing as rig


def _a_checkpoint(tmp_path) -> tuple[rig.Cluster, int, str]:
    """A completed checkpoint of the rig's job (kept while its cluster runs): its id and its
    directory, the ``-s`` path."""
    cluster = rig.Cluster(tmp_path / "earlier")
    first = cluster.start(1)
    trigger = rig.wait_for(lambda: cluster.all_sent(msg.TriggerCheckpoint))[0]
    cluster.acknowledge(1, first, trigger.checkpoint_id)
    rig.wait_for(lambda: cluster.all_sent(msg.NotifyCheckpointComplete))
    path = f"{tmp_path}/earlier/fencing/chk-{trigger.checkpoint_id}"
    rig.wait_for(lambda: (tmp_path / "earlier" / "fencing").glob("chk-*/_metadata"))
    return cluster, trigger.checkpoint_id, path


def _cancel(cluster: rig.Cluster, attempt: rig.DeployedAttempt) -> None:
    cluster.job_master.cancel()
    cluster.stop_when_told(attempt)
    cluster.thread.join(10)


def _program(root: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment()
    env.enable_checkpointing(50)
    env.get_checkpoint_config().set_checkpoint_storage(f"file://{root}")
    env.from_source(NumberSequenceSource(1, 10), "s").sink_to(DiscardingSink()).set_parallelism(1)
    return env


def test_seed_1042_a_resume_before_the_first_checkpoint_restores_the_savepoint_started_from(
    tmp_path, monkeypatch, caplog
):
    earlier, checkpoint_id, snapshot = _a_checkpoint(tmp_path)
    root = tmp_path / "jobs"

    started = _program(str(root))
    started.set_restore_path(snapshot)
    plan = plan_job(started._pipeline("from a savepoint"))
    # -s is kept in the job's directory as soon as it exists; the driver dies before the job's
    # first checkpoint (here its JobMaster ends without one).
    job_root = CheckpointDirectory(f"{root}/{plan.job_id}")
    assert job_root.read_small_file(RESTORED_FROM_FILE) == snapshot.encode()
    CheckpointDirectory(f"{root}/fencing").write_small_file(
        RESTORED_FROM_FILE, job_root.read_small_file(RESTORED_FROM_FILE)
    )  # the rig's job is named fencing
    original = rig.job_plan
    monkeypatch.setattr(
        rig,
        "job_plan",
        lambda r: dataclasses.replace(
            original(r), restore_from=plan.restore_from, restore_path=snapshot
        ),
    )
    killed = rig.Cluster(root)
    _cancel(killed, killed.start(1))
    assert not CheckpointDirectory(f"{root}/fencing").list_completed()

    # `run --resume`: the environment finds what the job started from, the JobMaster restores it.
    resumed = _program(str(root))
    resumed.resume_job("fencing")
    resume_plan = plan_job(resumed._pipeline("from a savepoint"))
    assert resume_plan.restore_from.checkpoint_id == checkpoint_id
    monkeypatch.setattr(
        rig,
        "job_plan",
        lambda r: dataclasses.replace(
            original(r),
            resume=True,
            restore_from=resume_plan.restore_from,
            restore_root_uri=resume_plan.restore_root_uri,
            restore_path=resume_plan.restore_path,
        ),
    )
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        cluster = rig.Cluster(root)
        first = cluster.start(1)
        assert f"Attempt 1 restores checkpoint {checkpoint_id}" in caplog.messages
    _cancel(cluster, first)
    _cancel(earlier, earlier.deployer.wait_for_attempt(1))


def test_a_resume_does_not_need_the_snapshot_started_from_once_it_is_gone(tmp_path):
    """A CLAIM-mode job deletes the snapshot it started from after its own checkpoints: a
    resume takes those over, and the missing snapshot is no error."""
    root = tmp_path / "jobs"
    CheckpointDirectory(f"{root}/fencing").write_small_file(
        RESTORED_FROM_FILE, str(tmp_path / "deleted" / "chk-3").encode()
    )
    resumed = _program(str(root))
    resumed.resume_job("fencing")
    plan = plan_job(resumed._pipeline("from a savepoint"))
    assert plan.restore_from is None and plan.restore_path is None
