"""Coordinator bookkeeping: acknowledgements, pending checkpoints, retained checkpoints."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.metadata import CheckpointMetadata, SubtaskCheckpointStats
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.pending_checkpoint import (
    AckResult,
    PendingCheckpoint,
    PendingCheckpoints,
    TaskAcknowledgement,
)
from barrierflow.protocol.checkpoint_barrier import CheckpointKind, CheckpointOptions

TASKS = frozenset({("v0", 0), ("v0", 1), ("v1", 0)})


def ack(task, state_size: int = 0) -> TaskAcknowledgement:
    stats = SubtaskCheckpointStats(task[0], task[1], 1.0, 2.0, 0.0, state_size)
    return TaskAcknowledgement(task, {}, stats)


def metadata(cid: int) -> CheckpointMetadata:
    return CheckpointMetadata("job", "name", cid, cid * 1000, cid * 1000 + 5, [])


# --- PendingCheckpoint -------------------------------------------------------------------------


def test_pending_checkpoint_is_fully_acknowledged_only_after_every_task_acked():
    pending = PendingCheckpoint(1, 1000, TASKS)
    assert pending.not_yet_acknowledged == TASKS
    for i, task in enumerate(sorted(TASKS)):
        assert not pending.is_fully_acknowledged
        assert pending.acknowledge(ack(task)) is AckResult.SUCCESS
        assert pending.not_yet_acknowledged == TASKS - set(sorted(TASKS)[: i + 1])
    assert pending.is_fully_acknowledged
    assert set(pending.acknowledged) == TASKS


def test_pending_checkpoint_duplicate_ack_keeps_the_first_and_does_not_count_twice():
    pending = PendingCheckpoint(1, 1000, frozenset({("v0", 0), ("v0", 1)}))
    first = ack(("v0", 0), state_size=1)
    assert pending.acknowledge(first) is AckResult.SUCCESS
    assert pending.acknowledge(ack(("v0", 0), state_size=2)) is AckResult.DUPLICATE
    assert pending.acknowledged[("v0", 0)] is first
    assert not pending.is_fully_acknowledged


def test_pending_checkpoint_ack_of_an_unknown_task_is_not_recorded():
    pending = PendingCheckpoint(1, 1000, TASKS)
    assert pending.acknowledge(ack(("v9", 0))) is AckResult.UNKNOWN_TASK
    assert pending.acknowledge(ack(("v0", 2))) is AckResult.UNKNOWN_TASK
    assert pending.acknowledged == {}


def test_pending_checkpoint_discarded_rejects_every_ack():
    pending = PendingCheckpoint(1, 1000, TASKS)
    pending.acknowledge(ack(("v0", 0)))
    pending.discarded = True
    assert pending.acknowledge(ack(("v0", 1))) is AckResult.DISCARDED
    assert pending.acknowledge(ack(("v9", 9))) is AckResult.DISCARDED
    assert set(pending.acknowledged) == {("v0", 0)}


# --- CompletedCheckpointStore --------------------------------------------------------------------


def test_store_rejects_a_retention_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        CompletedCheckpointStore(0)


def test_store_retains_the_newest_and_returns_the_subsumed_oldest_first():
    store = CompletedCheckpointStore(max_retained=2)
    assert store.latest() is None and store.all() == []
    assert store.add(metadata(1)) == []
    assert store.add(metadata(2)) == []
    assert [m.checkpoint_id for m in store.add(metadata(5))] == [1]
    assert [m.checkpoint_id for m in store.add(metadata(6))] == [2]
    assert [m.checkpoint_id for m in store.all()] == [5, 6]
    assert store.latest().checkpoint_id == 6


def test_store_with_one_retained_subsumes_the_previous_checkpoint():
    store = CompletedCheckpointStore()
    store.add(metadata(3))
    assert store.add(metadata(4)) == [metadata(3)]
    assert store.all() == [metadata(4)]


@pytest.mark.parametrize("cid", [2, 3])
def test_store_rejects_a_checkpoint_id_that_is_not_newer(cid):
    store = CompletedCheckpointStore(max_retained=2)
    store.add(metadata(1))
    store.add(metadata(3))
    with pytest.raises(ValueError, match=f"checkpoint {cid} is not newer than 3"):
        store.add(metadata(cid))
    assert [m.checkpoint_id for m in store.all()] == [1, 3]


@pytest.mark.parametrize(
    "max_retained",
    [1, 2, 3, 5],
)
def test_store_retains_up_to_max_retained_and_returns_every_dropped_checkpoint(max_retained):
    store = CompletedCheckpointStore(max_retained)
    subsumed = []
    for cid in range(1, 9):
        subsumed += [m.checkpoint_id for m in store.add(metadata(cid))]
        retained = [m.checkpoint_id for m in store.all()]
        assert retained == list(range(max(1, cid - max_retained + 1), cid + 1))
    assert subsumed == list(range(1, 9 - max_retained))


def test_store_all_returns_a_copy():
    store = CompletedCheckpointStore(max_retained=2)
    store.add(metadata(1))
    store.all().clear()
    assert store.latest() == metadata(1)


# --- PendingCheckpoints ---------------------------------------------------------------------------


def test_pending_checkpoints_a_completion_subsumes_older_checkpoints_but_never_a_savepoint():
    pending = PendingCheckpoints(timeout_s=60)
    savepoint = CheckpointOptions(CheckpointKind.SAVEPOINT, target_location="/sp")
    pending.add(PendingCheckpoint(1, 0, TASKS), 0.0)
    pending.add(PendingCheckpoint(2, 0, TASKS, savepoint), 0.0)
    pending.add(PendingCheckpoint(3, 0, TASKS), 0.0)
    pending.add(PendingCheckpoint(4, 0, TASKS), 0.0)
    assert pending.subsumed_by(4) == [1, 3]


def test_pending_checkpoints_expire_after_the_timeout_and_are_reported_every_period():
    pending = PendingCheckpoints(timeout_s=10, report_every_s=3)
    pending.add(PendingCheckpoint(1, 0, TASKS), 100.0)
    pending.add(PendingCheckpoint(2, 0, TASKS), 105.0)
    assert pending.expired(110.0) == [] and pending.expired(110.5) == [1]
    assert [p.checkpoint_id for p in pending.due_for_report(103.0)] == [1]
    assert pending.due_for_report(104.0) == []
    assert [p.checkpoint_id for p in pending.due_for_report(108.0)] == [1, 2]


def test_pending_checkpoints_refuse_an_id_not_newer_than_the_pending_ones():
    pending = PendingCheckpoints(timeout_s=10)
    pending.add(PendingCheckpoint(5, 0, TASKS), 0.0)
    with pytest.raises(ValueError, match="not newer"):
        pending.add(PendingCheckpoint(5, 0, TASKS), 0.0)
