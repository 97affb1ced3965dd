"""A restore that meets a corrupt file of the latest checkpoint: the JobMaster says so and the
next attempt falls back to the checkpoint before it; a restore cut short while the file is
intact spends no checkpoint (played without Spark, as the fencing tests play the slots and
tasks)."""

from __future__ import annotations

import dataclasses
import logging
import os

from barrierflow.checkpoint.metadata import (
    FileHandle,
    OperatorSubtaskState,
    SubtaskCheckpointStats,
    content_checksum,
)
from barrierflow.cluster.restart_strategy import FixedDelayRestart
from barrierflow.control import messages as msg
from barrierflow.coordination.checkpoint_coordinator import CoordinatorConfig
from tests.unit.cluster import test_job_master_fencing as rig


def _complete_a_checkpoint(cluster: rig.Cluster, attempt: rig.DeployedAttempt, after: int) -> int:
    """Its first task keeps its state in a file, ``chk-N/state``; the others keep none."""
    trigger = rig.wait_for(
        lambda: [t for t in cluster.all_sent(msg.TriggerCheckpoint) if t.checkpoint_id > after]
    )[0]
    checkpoint_id = trigger.checkpoint_id
    root = cluster.job_master.plan.task_config.storage_uri
    rel = f"chk-{checkpoint_id}/state"
    data = f"the state of checkpoint {checkpoint_id}".encode()
    os.makedirs(f"{root}/chk-{checkpoint_id}", exist_ok=True)
    with open(f"{root}/{rel}", "wb") as f:
        f.write(data)
    graph = cluster.job_master.plan.graph.job_graph
    for vertex, subtask in attempt.tasks:
        states = {}
        if (vertex, subtask) == attempt.tasks[0]:
            uid = next(v for v in graph.vertices if v.id == vertex).chain[0].uid
            handle = FileHandle(rel, len(data), content_checksum(data))
            states = {uid: OperatorSubtaskState(subtask, operator_state=handle)}
        stats = SubtaskCheckpointStats(vertex, subtask, 0.0, 0.0, 0.0, 0)
        ack = msg.AcknowledgeCheckpoint(
            attempt.number, vertex, subtask, checkpoint_id, states, stats
        )
        cluster.from_task(attempt.number, vertex, subtask, ack)
    rig.wait_for(
        lambda: [
            n for n in cluster.all_sent(msg.NotifyCheckpointComplete)
            if n.checkpoint_id == checkpoint_id
        ]
    )  # fmt: skip
    return checkpoint_id


def _two_checkpoints_then_a_restart(
    tmp_path, monkeypatch
) -> tuple[rig.Cluster, int, int, rig.DeployedAttempt]:
    """Checkpoints ``older`` and ``newer`` retained (num-retained 2), the first attempt failed,
    the second one restoring ``newer``."""
    original = rig.job_plan

    def plan(root: str):
        return dataclasses.replace(
            original(root),
            coordinator_config=CoordinatorConfig(0.05, 60.0, 0.0, 1, 0, 2),
            restart_strategy=FixedDelayRestart(attempts=3, delay_s=0.0),
        )

    monkeypatch.setattr(rig, "job_plan", plan)
    cluster = rig.Cluster(tmp_path)
    first = cluster.start(1)
    older = _complete_a_checkpoint(cluster, first, 0)
    newer = _complete_a_checkpoint(cluster, first, older)
    _fail(cluster, first, None)
    return cluster, older, newer, cluster.start(2)


def _cancel(cluster: rig.Cluster, attempt: rig.DeployedAttempt) -> None:
    cluster.job_master.cancel()
    cluster.stop_when_told(attempt)
    cluster.thread.join(10)


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
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        cluster, older, newer, second = _two_checkpoints_then_a_restart(tmp_path, monkeypatch)
        corrupt = f"{tmp_path}/fencing/chk-{newer}/state"
        with open(corrupt, "r+b") as f:
            f.write(b"X")
        _fail(cluster, second, corrupt)
        third = cluster.start(3)

        messages = [r.getMessage() for r in caplog.records]
        assert f"Attempt 2 restores checkpoint {newer}" in messages
        assert f"Attempt 3 restores checkpoint {older}" in messages
        fallback = [m for m in messages if "falling back" in m]
        assert fallback and f"chk-{newer}/state is corrupt" in fallback[0]
    _cancel(cluster, third)


def test_a_restore_cut_short_with_its_file_intact_spends_no_checkpoint(
    tmp_path, monkeypatch, caplog
):
    """A restore that reports a file unusable while the file is intact (a killed process, a
    closed connection) must not spend a checkpoint: kills during restores would use up the
    fallbacks num-retained keeps."""
    with caplog.at_level(logging.INFO, logger="barrierflow"):
        cluster, _, newer, second = _two_checkpoints_then_a_restart(tmp_path, monkeypatch)
        _fail(cluster, second, f"{tmp_path}/fencing/chk-{newer}/state")  # yet intact
        third = cluster.start(3)

        messages = [r.getMessage() for r in caplog.records]
        assert f"Attempt 3 restores checkpoint {newer}" in messages
        assert not [m for m in messages if "falling back" in m]
        assert [m for m in messages if "reads back intact" in m]
    _cancel(cluster, third)
