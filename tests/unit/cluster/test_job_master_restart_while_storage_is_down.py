"""A restart while the checkpoint storage is briefly unreachable (seed 7028 of the fault
campaign: the S3 server down when a killed task's attempt restarted). Reading the checkpoint to
restore from waits for the storage, a bounded number of times, instead of ending the job for
good; storage that stays down fails the job with an error that says so, and the address file
the job cannot remove does not replace that error (played without Spark, on the fencing rig)."""

from __future__ import annotations

import dataclasses
import logging

from barrierflow.checkpoint.storage import CheckpointDirectory
from barrierflow.cluster.restart_strategy import FixedDelayRestart
from barrierflow.errors import JobExecutionError
from tests.unit.cluster import test_job_master_fencing as rig
from tests.unit.cluster.test_job_master_corrupt_restore import (
    _cancel,
    _complete_a_checkpoint,
    _fail,
)

_DOWN = (
    "When getting information for key 'ckpt/chk-1/_metadata': AWS Error NETWORK_CONNECTION "
    "during HeadObject operation: curlCode: 7, Could not connect to server"
)


def _storage_down(monkeypatch, reads: int) -> None:
    """The next ``reads`` reads of a checkpoint's metadata, and every removal of a small file
    meanwhile, fail as an S3 server that is down fails them."""
    left = [reads]
    read_metadata, delete_small_file = (
        CheckpointDirectory.read_metadata,
        CheckpointDirectory.delete_small_file,
    )

    def failing_read(self, checkpoint_id):
        if left[0] > 0:
            left[0] -= 1
            raise OSError(_DOWN)
        return read_metadata(self, checkpoint_id)

    def failing_delete(self, name):
        if left[0] > 0:
            raise OSError(_DOWN)
        return delete_small_file(self, name)

    monkeypatch.setattr(CheckpointDirectory, "read_metadata", failing_read)
    monkeypatch.setattr(CheckpointDirectory, "delete_small_file", failing_delete)


def _one_checkpoint_then_a_failure(tmp_path, monkeypatch, reads_failing: int) -> tuple:
    original = rig.job_plan
    monkeypatch.setattr(
        rig,
        "job_plan",
        lambda root: dataclasses.replace(
            original(root), restart_strategy=FixedDelayRestart(attempts=3, delay_s=0.0)
        ),
    )
    cluster = rig.Cluster(tmp_path)
    first = cluster.start(1)
    checkpoint_id = _complete_a_checkpoint(cluster, first, 0)
    _storage_down(monkeypatch, reads_failing)
    _fail(cluster, first, None)
    return cluster, checkpoint_id


def test_seed_7028_a_restart_waits_for_storage_that_comes_back(
    tmp_path, monkeypatch, slept, caplog
):
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        cluster, checkpoint_id = _one_checkpoint_then_a_failure(tmp_path, monkeypatch, 2)
        second = cluster.start(2)

        messages = [r.getMessage() for r in caplog.records]
        assert f"Attempt 2 restores checkpoint {checkpoint_id}" in messages
        retries = [m for m in messages if "may be restarting" in m]
        assert len(retries) == 2 and "NETWORK_CONNECTION" in retries[0]
        assert slept == [0.5, 1.0]
    _cancel(cluster, second)


def test_storage_that_stays_down_fails_the_job_saying_so_not_with_the_address_file(
    tmp_path, monkeypatch, slept
):
    cluster, _ = _one_checkpoint_then_a_failure(tmp_path, monkeypatch, 1000)
    cluster.thread.join(10)

    (outcome,) = cluster.outcome
    assert isinstance(outcome, JobExecutionError)
    assert "cannot restart" in str(outcome) and "could not read the checkpoint" in str(outcome)
    assert "NETWORK_CONNECTION" in str(outcome)
