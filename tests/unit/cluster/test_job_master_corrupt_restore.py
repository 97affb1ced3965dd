"""A restore that meets a corrupt file of the latest checkpoint: the JobMaster says so and the
next attempt falls back to the checkpoint before it (played without Spark, as the fencing
tests play the slots and tasks)."""

from __future__ import annotations

import dataclasses
import logging

from barrierflow.cluster.restart_strategy import FixedDelayRestart
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from tests.unit.cluster import test_job_master_fencing as rig


def _complete_a_checkpoint(cluster: rig.Cluster, attempt: rig.DeployedAttempt, after: int) -> int:
    trigger = rig.wait_for(
        lambda: [t for t in cluster.all_sent(msg.TriggerCheckpoint) if t.checkpoint_id > after]
    )[0]
    cluster.acknowledge(attempt.number, attempt, trigger.checkpoint_id)
    rig.wait_for(
        lambda: [
            n
            for n in cluster.all_sent(msg.NotifyCheckpointComplete)
            if n.checkpoint_id == trigger.checkpoint_id
        ]
    )
    return trigger.checkpoint_id


def _fail(cluster: rig.Cluster, attempt: rig.DeployedAttempt, corrupt: str | None) -> None:
    vertex, subtask = attempt.tasks[0]
    failed = msg.TaskFailed(
        attempt.number, vertex, subtask, "boom", "", corrupt_checkpoint_file=corrupt
    )
    cluster.from_task(attempt.number, vertex, subtask, failed)
    cluster.stop_when_told(attempt)


def test_seed_105_a_corrupt_file_met_by_a_restore_makes_the_next_attempt_fall_back(
    tmp_path, monkeypatch, caplog
):
    original = rig.job_plan

    def plan(root: str):
        return dataclasses.replace(
            original(root),
            coordinator_config=CoordinatorConfig(0.05, 60.0, 0.0, 1, 0, 2),
            restart_strategy=FixedDelayRestart(attempts=3, delay_s=0.0),
        )

    monkeypatch.setattr(rig, "job_plan", plan)
    cluster = rig.Cluster(tmp_path)
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        first = cluster.start(1)
        older = _complete_a_checkpoint(cluster, first, 0)
        newer = _complete_a_checkpoint(cluster, first, older)
        _fail(cluster, first, None)
        second = cluster.start(2)
        _fail(cluster, second, f"{tmp_path}/fencing/chk-{newer}/state")
        third = cluster.start(3)

        messages = [r.getMessage() for r in caplog.records]
        assert f"Attempt 2 restores checkpoint {newer}" in messages
        assert f"Attempt 3 restores checkpoint {older}" in messages
        fallback = [m for m in messages if "falling back" in m]
        assert fallback and f"chk-{newer}/state is corrupt" in fallback[0]

    cluster.job_master.cancel()
    cluster.stop_when_told(third)
    cluster.thread.join(10)
