"""When the coordinator triggers what: periodic checkpoints (interval, min pause, max
concurrent), the final checkpoint of a bounded job, and savepoints, which go first."""

from __future__ import annotations

import pytest

from barrierflow.coordination.checkpoint_request_decider import (
    FINAL,
    PERIODIC,
    CheckpointRequest,
    CheckpointRequestDecider,
    RequestKind,
    TriggerConfig,
    TriggerNow,
    WaitForEvent,
    WaitUntil,
)
from barrierflow.protocol.checkpoint_barrier import (
    CHECKPOINT,
    FINAL_CHECKPOINT,
    CheckpointKind,
    CheckpointOptions,
)


def savepoint(kind: CheckpointKind = CheckpointKind.SAVEPOINT, where: str = "/sp/1"):
    return CheckpointRequest(RequestKind.SAVEPOINT, CheckpointOptions(kind, target_location=where))


SAVEPOINT = savepoint()


def decider(interval_s=10.0, min_pause_s=0.0, max_concurrent=1, after_finish=True):
    return CheckpointRequestDecider(
        TriggerConfig(interval_s, min_pause_s, max_concurrent, after_finish)
    )


def test_before_every_task_runs_a_checkpoint_is_due_at_once():
    assert decider().decide(5.0, 0) == TriggerNow(PERIODIC)


def test_periodic_checkpoints_wait_for_the_interval_since_the_last_trigger():
    d = decider(interval_s=10.0)
    d.all_tasks_running(5.0)
    assert d.decide(14.0, 0) == WaitUntil(15.0)
    assert d.decide(15.0, 0) == TriggerNow(PERIODIC)
    d.triggered(PERIODIC, 15.0)
    d.completed(CHECKPOINT, 16.0)
    assert d.decide(16.0, 0) == WaitUntil(25.0)


def test_the_min_pause_counts_from_the_last_completion():
    d = decider(interval_s=10.0, min_pause_s=4.0)
    d.all_tasks_running(5.0)
    d.completed(CHECKPOINT, 14.0)  # interval elapsed at 15, but it completed at 14: wait to 18
    assert d.decide(15.0, 0) == WaitUntil(18.0)
    assert d.decide(18.0, 0) == TriggerNow(PERIODIC)


def test_a_min_pause_allows_one_checkpoint_at_a_time_even_under_a_higher_max_concurrent():
    d = decider(interval_s=1.0, min_pause_s=4.0, max_concurrent=3)
    assert isinstance(d.decide(100.0, 1), WaitForEvent)
    d.completed(CHECKPOINT, 40.0)
    assert isinstance(d.decide(100.0, 1), WaitForEvent)


def test_max_concurrent_bounds_the_pending_checkpoints():
    d = decider(interval_s=1.0, max_concurrent=2)
    assert d.decide(100.0, 1) == TriggerNow(PERIODIC)
    decision = d.decide(100.0, 2)
    assert isinstance(decision, WaitForEvent) and "2 checkpoint(s) pending" in decision.reason


def test_once_the_sources_finished_a_final_checkpoint_is_due_without_waiting_for_the_interval():
    d = decider(interval_s=60.0)
    d.all_tasks_running(10.0)
    assert d.decide(11.0, 0) == WaitUntil(70.0)
    d.sources_finished()
    assert d.decide(11.0, 0) == TriggerNow(FINAL)
    assert FINAL.options == FINAL_CHECKPOINT


def test_the_final_checkpoint_still_waits_for_max_concurrent_and_the_min_pause():
    d = decider(interval_s=60.0, min_pause_s=5.0)
    d.sources_finished()
    assert isinstance(d.decide(11.0, 1), WaitForEvent)
    d.completed(CHECKPOINT, 10.5)
    assert d.decide(11.0, 0) == WaitUntil(15.5)


def test_after_a_final_checkpoint_was_triggered_the_next_waits_the_interval_unless_it_aborts():
    d = decider(interval_s=60.0)
    d.sources_finished()
    d.triggered(FINAL, 11.0)
    assert d.decide(12.0, 0) == WaitUntil(71.0)  # still final when it comes
    assert d.decide(71.0, 0) == TriggerNow(FINAL)
    d.aborted(FINAL_CHECKPOINT)
    assert d.decide(12.0, 0) == TriggerNow(FINAL)


def test_nothing_is_triggered_after_a_final_checkpoint_completed():
    d = decider(interval_s=1.0)
    d.sources_finished()
    d.triggered(FINAL, 1.0)
    d.completed(FINAL_CHECKPOINT, 2.0)
    assert isinstance(d.decide(100.0, 0), WaitForEvent)
    d.request_savepoint(SAVEPOINT)
    assert isinstance(d.decide(100.0, 0), WaitForEvent)  # the tasks are ending


def test_an_aborted_checkpoint_before_the_sources_finished_changes_nothing():
    d = decider(interval_s=60.0)
    d.all_tasks_running(10.0)
    d.aborted(CHECKPOINT)
    assert d.decide(11.0, 0) == WaitUntil(70.0)


def test_without_checkpoints_after_tasks_finish_nothing_is_triggered_while_some_sources_run():
    d = decider(interval_s=1.0, after_finish=False)
    d.source_ended()
    assert isinstance(d.decide(100.0, 0), WaitForEvent)
    d.sources_finished()
    assert d.decide(100.0, 0) == TriggerNow(FINAL)
    on = decider(interval_s=1.0)
    on.source_ended()
    assert on.decide(100.0, 0) == TriggerNow(PERIODIC)


def test_a_new_attempt_forgets_the_ended_sources():
    d = decider(interval_s=1.0)
    d.sources_finished()
    d.triggered(FINAL, 1.0)
    d.completed(FINAL_CHECKPOINT, 2.0)
    d.attempt_started()
    assert d.decide(100.0, 0) == TriggerNow(PERIODIC)


def test_a_savepoint_goes_first_past_the_interval_min_pause_and_max_concurrent():
    d = decider(interval_s=60.0, min_pause_s=30.0, max_concurrent=1)
    d.all_tasks_running(10.0)
    d.completed(CHECKPOINT, 10.0)
    d.request_savepoint(SAVEPOINT)
    assert d.decide(11.0, 1) == TriggerNow(SAVEPOINT)
    d.triggered(SAVEPOINT, 11.0)
    assert isinstance(d.decide(11.0, 1), WaitForEvent)


def test_savepoints_are_triggered_in_the_order_they_were_asked_for():
    second = savepoint(where="/sp/2")
    d = decider()
    d.request_savepoint(SAVEPOINT)
    d.request_savepoint(second)
    assert d.decide(0.0, 0) == TriggerNow(SAVEPOINT)
    d.triggered(SAVEPOINT, 0.0)
    assert isinstance(d.decide(0.0, 1), WaitForEvent)  # one savepoint at a time
    d.completed(SAVEPOINT.options, 1.0)
    assert d.decide(1.0, 0) == TriggerNow(second)


def test_only_savepoint_requests_are_queued():
    with pytest.raises(ValueError, match="savepoint requests"):
        decider().request_savepoint(PERIODIC)


def test_while_a_savepoint_is_pending_no_checkpoint_is_triggered():
    d = decider(interval_s=1.0, max_concurrent=5)
    d.request_savepoint(SAVEPOINT)
    d.triggered(SAVEPOINT, 0.0)
    decision = d.decide(100.0, 1)
    assert isinstance(decision, WaitForEvent) and "savepoint is pending" in decision.reason
    d.aborted(SAVEPOINT.options)
    assert d.decide(100.0, 0) == TriggerNow(PERIODIC)


def test_a_terminate_savepoint_waits_for_the_sources_to_end_and_is_the_final_snapshot():
    terminate = savepoint(CheckpointKind.TERMINATE)
    d = decider(interval_s=60.0)
    d.all_tasks_running(0.0)
    d.request_savepoint(terminate)
    assert d.decide(1.0, 0) == WaitUntil(60.0)  # checkpoints go on while the input drains
    d.sources_finished()
    assert d.decide(1.0, 0) == TriggerNow(terminate)
    d.triggered(terminate, 1.0)
    d.completed(terminate.options, 2.0)
    assert isinstance(d.decide(100.0, 0), WaitForEvent)  # the tasks are ending


def test_a_suspend_savepoint_that_completed_ends_the_triggering():
    suspend = savepoint(CheckpointKind.SUSPEND)
    d = decider(interval_s=1.0)
    d.request_savepoint(suspend)
    assert d.decide(0.0, 0) == TriggerNow(suspend)
    d.triggered(suspend, 0.0)
    d.completed(suspend.options, 1.0)
    assert isinstance(d.decide(100.0, 0), WaitForEvent)


def test_with_checkpointing_off_only_savepoints_are_triggered():
    d = decider(interval_s=None)
    d.all_tasks_running(0.0)
    assert isinstance(d.decide(1000.0, 0), WaitForEvent)
    d.sources_finished()  # a bounded job without checkpointing ends without a final one
    assert isinstance(d.decide(1000.0, 0), WaitForEvent)
    d.request_savepoint(SAVEPOINT)
    assert d.decide(1000.0, 0) == TriggerNow(SAVEPOINT)


def test_with_checkpointing_off_a_failed_drain_savepoint_is_followed_by_a_final_checkpoint():
    terminate = savepoint(CheckpointKind.TERMINATE)
    d = decider(interval_s=None)
    d.request_savepoint(terminate)
    d.sources_finished()
    d.triggered(terminate, 1.0)
    d.aborted(terminate.options)
    assert d.decide(2.0, 0) == TriggerNow(FINAL)  # the drained tasks wait for one


def test_a_withdrawn_savepoint_request_is_not_triggered():
    d = decider()
    d.request_savepoint(SAVEPOINT)
    assert d.withdraw(SAVEPOINT)
    assert not d.withdraw(SAVEPOINT)
    assert d.decide(0.0, 0) == TriggerNow(PERIODIC)
