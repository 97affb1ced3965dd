"""Coordinator bookkeeping: acknowledgements, retained checkpoints, when to trigger."""

from __future__ import annotations

import pytest

from barrierflow.checkpoint.metadata import CheckpointMetadata, SubtaskCheckpointStats
from barrierflow.coordination.completed_checkpoint_store import CompletedCheckpointStore
from barrierflow.coordination.pending_checkpoint import (
    AckResult,
    PendingCheckpoint,
    TaskAcknowledgement,
)
from barrierflow.coordination.trigger_policy import TriggerNow, TriggerPolicy, WaitUntil

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


# --- TriggerPolicy -------------------------------------------------------------------------------


def test_trigger_policy_triggers_the_first_checkpoint_at_once():
    assert TriggerPolicy(10.0).decide(5.0, None, None, 0) == TriggerNow()


def test_trigger_policy_waits_for_the_interval_since_the_last_trigger():
    policy = TriggerPolicy(interval_s=10.0)
    assert policy.decide(14.0, last_trigger_s=5.0, last_completion_s=6.0, num_pending=0) == (
        WaitUntil(15.0)
    )
    assert policy.decide(15.0, 5.0, 6.0, 0) == TriggerNow()
    assert policy.decide(30.0, 5.0, 6.0, 0) == TriggerNow()


def test_trigger_policy_waits_for_the_min_pause_after_the_last_completion():
    policy = TriggerPolicy(interval_s=10.0, min_pause_s=4.0)
    # interval elapsed at 15, but the last checkpoint completed at 14: wait until 18
    assert policy.decide(15.0, 5.0, 14.0, 0) == WaitUntil(18.0)
    assert policy.decide(18.0, 5.0, 14.0, 0) == TriggerNow()


def test_trigger_policy_with_min_pause_allows_one_checkpoint_at_a_time():
    policy = TriggerPolicy(interval_s=1.0, min_pause_s=4.0, max_concurrent=3)
    assert policy.decide(100.0, 50.0, 40.0, num_pending=1) is None


def test_trigger_policy_respects_max_concurrent():
    policy = TriggerPolicy(interval_s=1.0, max_concurrent=2)
    assert policy.decide(100.0, 50.0, 40.0, num_pending=1) == TriggerNow()
    assert policy.decide(100.0, 50.0, 40.0, num_pending=2) is None


def test_trigger_policy_urgent_skips_the_interval_but_not_max_concurrent():
    policy = TriggerPolicy(interval_s=60.0, max_concurrent=1)
    assert policy.decide(11.0, 10.0, None, 0) == WaitUntil(70.0)
    assert policy.decide(11.0, 10.0, None, 0, urgent=True) == TriggerNow()
    assert policy.decide(11.0, 10.0, None, 1, urgent=True) is None


def test_trigger_policy_urgent_still_waits_for_the_min_pause():
    policy = TriggerPolicy(interval_s=60.0, min_pause_s=5.0)
    assert policy.decide(11.0, 10.0, 10.5, 0, urgent=True) == WaitUntil(15.5)


def test_trigger_policy_with_min_pause_allows_one_checkpoint_at_a_time_before_any_completed():
    policy = TriggerPolicy(interval_s=1.0, min_pause_s=4.0, max_concurrent=3)
    assert policy.decide(100.0, 50.0, None, num_pending=1) is None
